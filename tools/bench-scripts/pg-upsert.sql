-- pgbench script: the statements of one launch upsert (a re-registration with the same token) on
-- registryd's PostgreSQL store, as pg_stat_statements recorded them at c0c0b2b, one round trip each.
-- The store reads device, tombstone and push token in one statement, and takes the key barrier
-- and tries the user lock in one (pg_advisory_lock_shared, pg_try_advisory_lock) where this script
-- takes pg_advisory_lock.
-- For measuring the database side alone against the tools/bench data set of 100,000 devices, e.g.
--   pgbench -n -M extended -c 16 -j 2 -T 15 -f tools/bench-scripts/pg-upsert.sql URL   (unnamed statements,
--                                                          parsed and planned every time)
--   pgbench -n -M prepared ...                             (prepared once per connection, as registryd does)
-- The first SELECT only fetches the device's owner_key for the lookup the store makes by it (the store
-- computes it as an HMAC): one round trip more than registryd makes. docs/performance.md has the
-- setup (the pgbench runs under "Where the time goes").
\set u random(0, 19999)
\set d random(0, 3)
\set now 1796300000000 + random(0, 1000000)
\set seq 1796300000000000 + random(0, 1000000000)
SELECT owner_key FROM registry_tokens WHERE user_id = 'u' || lpad(:u::text, 8, '0') AND app_id = 'default' AND device_id = 'd' || :d AND kind = 1 AND activity_id = '' \gset
SELECT pg_advisory_lock(:u);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT platform, environment, os_version, app_version, created_at, last_seen_at, sequence FROM registry_devices WHERE user_id = 'u' || lpad(:u::text, 8, '0') AND app_id = 'default' AND device_id = 'd' || :d;
SELECT sequence, deleted_at FROM registry_tombstones WHERE user_id = 'u' || lpad(:u::text, 8, '0') AND app_id = 'default' AND device_id = 'd' || :d;
SELECT user_id, app_id, device_id, activity_id, sealed FROM registry_tokens WHERE owner_key = :owner_key;
INSERT INTO registry_devices (user_id, app_id, device_id, platform, environment, os_version, app_version, created_at, last_seen_at, sequence) VALUES ('u' || lpad(:u::text, 8, '0'), 'default', 'd' || :d, 'apns', 'production', '18.2', '2.1.0', 1790000000000, :now, :seq) ON CONFLICT (user_id, app_id, device_id) DO UPDATE SET platform = EXCLUDED.platform, environment = EXCLUDED.environment, os_version = EXCLUDED.os_version, app_version = EXCLUDED.app_version, created_at = EXCLUDED.created_at, last_seen_at = EXCLUDED.last_seen_at, sequence = EXCLUDED.sequence;
SELECT sealed, environment, updated_at FROM registry_tokens WHERE user_id = 'u' || lpad(:u::text, 8, '0') AND app_id = 'default' AND device_id = 'd' || :d AND kind = 1 AND activity_id = '';
UPDATE registry_tokens SET environment = 'production', updated_at = :now WHERE user_id = 'u' || lpad(:u::text, 8, '0') AND app_id = 'default' AND device_id = 'd' || :d AND kind = 1 AND activity_id = '';
SELECT kind, sealed, environment, updated_at FROM registry_tokens WHERE user_id = 'u' || lpad(:u::text, 8, '0') AND app_id = 'default' AND device_id = 'd' || :d AND kind IN (1, 2) UNION ALL SELECT 0, NULL, NULL, count(*) FROM registry_tokens WHERE user_id = 'u' || lpad(:u::text, 8, '0') AND app_id = 'default' AND device_id = 'd' || :d AND kind = 3;
COMMIT;
SELECT pg_advisory_unlock(:u);
