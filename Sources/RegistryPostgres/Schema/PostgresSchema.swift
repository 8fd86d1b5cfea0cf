import RegistryCore
import Postgres

/// The PostgreSQL store's tables, as versioned migrations (`PostgresMigrations`
/// applies them at start, once across nodes starting together).
///
/// Every id column is `COLLATE "C"`: ids compare and sort as UTF-8 bytes,
/// as the contract orders them (and as the LMDB store's keys do); equality
/// is byte equality. Timestamps are milliseconds since 1970 (`bigint`);
/// sequences are `numeric(20,0)` (an unsigned 64-bit value does not fit
/// `bigint`). Tokens are sealed (`TokenVault`): `sealed` opens only with
/// the token keys, and `owner_key` (HMAC of the token under the index key,
/// kind byte last) is unique, which is the one-owner rule's index.
enum PostgresSchema {
    static let migrations = PostgresMigrations([
        PostgresMigration(version: 1, sql: """
            CREATE TABLE registry_meta (
                name text COLLATE "C" PRIMARY KEY,
                value bytea NOT NULL
            );
            CREATE TABLE registry_apps (
                app_id text COLLATE "C" PRIMARY KEY
            );
            CREATE TABLE registry_devices (
                user_id text COLLATE "C" NOT NULL,
                app_id text COLLATE "C" NOT NULL REFERENCES registry_apps,
                device_id text COLLATE "C" NOT NULL,
                platform text NOT NULL CHECK (platform IN ('apns', 'fcm')),
                environment text NOT NULL CHECK (environment IN ('production', 'sandbox')),
                os_version text,
                app_version text,
                created_at bigint NOT NULL,
                last_seen_at bigint NOT NULL,
                sequence numeric(20, 0),
                PRIMARY KEY (user_id, app_id, device_id)
            );
            CREATE INDEX registry_devices_last_seen ON registry_devices (last_seen_at);
            -- kind: 1 push, 2 push-to-start, 3 activity (activity_id '' for the first two).
            CREATE TABLE registry_tokens (
                user_id text COLLATE "C" NOT NULL,
                app_id text COLLATE "C" NOT NULL,
                device_id text COLLATE "C" NOT NULL,
                kind smallint NOT NULL CHECK (kind IN (1, 2, 3)),
                activity_id text COLLATE "C" NOT NULL,
                sealed bytea NOT NULL,
                owner_key bytea NOT NULL UNIQUE,
                environment text NOT NULL CHECK (environment IN ('production', 'sandbox')),
                updated_at bigint NOT NULL,
                PRIMARY KEY (user_id, app_id, device_id, kind, activity_id),
                FOREIGN KEY (user_id, app_id, device_id) REFERENCES registry_devices ON DELETE CASCADE,
                CHECK ((kind = 3) = (activity_id <> ''))
            );
            CREATE INDEX registry_tokens_fan_out ON registry_tokens (activity_id, user_id, app_id, device_id)
                WHERE kind = 3;
            CREATE INDEX registry_tokens_activity_expiry ON registry_tokens (updated_at) WHERE kind = 3;
            CREATE TABLE registry_tombstones (
                user_id text COLLATE "C" NOT NULL,
                app_id text COLLATE "C" NOT NULL REFERENCES registry_apps,
                device_id text COLLATE "C" NOT NULL,
                sequence numeric(20, 0) NOT NULL,
                deleted_at bigint NOT NULL,
                PRIMARY KEY (user_id, app_id, device_id)
            );
            CREATE INDEX registry_tombstones_deleted ON registry_tombstones (deleted_at);
            CREATE TABLE registry_history (
                user_id text COLLATE "C" NOT NULL,
                at bigint NOT NULL,
                counter integer NOT NULL,
                app_id text COLLATE "C" NOT NULL,
                device_id text COLLATE "C" NOT NULL,
                kind text NOT NULL,
                activity_id text COLLATE "C",
                action text NOT NULL,
                reason text,
                feedback_reason text,
                fingerprint text NOT NULL,
                PRIMARY KEY (user_id, at, counter)
            );
            CREATE INDEX registry_history_at ON registry_history (at);
            """),
        // Sealed values bound to their record (`TokenSlot`): the store seals
        // the older ones again at open (`PostgresTokenBinding`); the version
        // keeps a build that cannot open them from starting. Nodes record
        // the sealing keys they hold (`PostgresNode`), so a key rotation
        // retires an old key only once every live node has the new one.
        PostgresMigration(version: 2, sql: """
            COMMENT ON COLUMN registry_tokens.sealed IS
                'AES-256-GCM (TokenSealer format 2), bound to kind, user, app, device and activity';
            CREATE TABLE registry_nodes (
                node_id text COLLATE "C" PRIMARY KEY,
                name text NOT NULL,
                current_key smallint NOT NULL,
                key_ids bytea NOT NULL,
                seen_at bigint NOT NULL
            );
            """),
        // The delivery queue (`PostgresRegistryStore+Delivery`). A
        // notification keeps how many of its deliveries are in each state
        // (the `count_` columns), changed by SQL arithmetic in the
        // transaction that moves them, so nodes moving deliveries of one
        // notification at once lose no change. Deliveries name their holder,
        // never a token. The two partial indexes are the queue: due `queued`
        // deliveries in claim order, and `sending` ones by when they were
        // claimed (abandoned claims). No foreign key: a delivery is inserted
        // and deleted only with its notification, and checking one per row
        // would slow the insert of a large fan-out.
        PostgresMigration(version: 3, sql: """
            CREATE TABLE registry_notifications (
                id uuid PRIMARY KEY,
                created_at bigint NOT NULL,
                app_id text COLLATE "C" NOT NULL,
                push_type text NOT NULL,
                payload bytea NOT NULL,
                priority smallint NOT NULL,
                expiration bigint NOT NULL,
                collapse_id text,
                idempotency_key text COLLATE "C",
                digest bytea NOT NULL,
                count_queued integer NOT NULL,
                count_sending integer NOT NULL,
                count_delivered integer NOT NULL,
                count_failed integer NOT NULL,
                count_unknown integer NOT NULL,
                count_expired integer NOT NULL,
                count_cancelled integer NOT NULL
            );
            CREATE INDEX registry_notifications_created ON registry_notifications (created_at);
            CREATE TABLE registry_deliveries (
                notification_id uuid NOT NULL,
                idx integer NOT NULL CHECK (idx >= 0),
                user_id text COLLATE "C" NOT NULL,
                app_id text COLLATE "C" NOT NULL,
                device_id text COLLATE "C" NOT NULL,
                kind text NOT NULL CHECK (kind IN ('push', 'pushToStart', 'activity')),
                activity_id text COLLATE "C",
                token_fingerprint text NOT NULL,
                platform text NOT NULL CHECK (platform IN ('apns', 'fcm')),
                environment text NOT NULL CHECK (environment IN ('production', 'sandbox')),
                state text NOT NULL
                    CHECK (state IN ('queued', 'sending', 'delivered', 'failed', 'unknown', 'expired', 'cancelled')),
                apns_id text NOT NULL,
                status integer,
                reason text,
                attempts integer NOT NULL,
                retries integer NOT NULL,
                updated_at bigint NOT NULL,
                not_before bigint NOT NULL,
                claimed_at bigint,
                PRIMARY KEY (notification_id, idx)
            );
            CREATE INDEX registry_deliveries_due ON registry_deliveries (not_before, notification_id, idx)
                WHERE state = 'queued';
            CREATE INDEX registry_deliveries_sending ON registry_deliveries (claimed_at) WHERE state = 'sending';
            CREATE TABLE registry_idempotency_keys (
                key text COLLATE "C" PRIMARY KEY,
                notification_id uuid NOT NULL,
                created_at bigint NOT NULL
            );
            """),
        // Delivery through more than one provider: a notification holds
        // an FCM body besides (or instead of) its APNs payload, and a
        // delivery the provider's message id (FCM's `name`). Columns added
        // nullable without a default, so existing rows need no rewrite.
        PostgresMigration(version: 4, sql: """
            ALTER TABLE registry_notifications ALTER COLUMN payload DROP NOT NULL;
            ALTER TABLE registry_notifications ADD COLUMN fcm bytea;
            ALTER TABLE registry_deliveries ADD COLUMN message_id text;
            """),
        // Cancel means stop: a cancelled notification keeps when it was
        // cancelled, so a retry settled (or claimed) after it is cancelled too.
        PostgresMigration(version: 5, sql: """
            ALTER TABLE registry_notifications ADD COLUMN cancelled_at bigint;
            """),
        // Urgent first: a delivery carries its notification's priority, and
        // the due index is in claim order (priority, then when due). The
        // APNs sandbox's delivery-log id (`apns-unique-id`) has a column.
        // The unfinished notifications are indexed, so the queue's size
        // (`--max-queued-deliveries`) is a sum over them. An activity target
        // is resolved page by page after the accept: where it stands.
        PostgresMigration(version: 6, sql: """
            ALTER TABLE registry_deliveries ADD COLUMN priority smallint NOT NULL DEFAULT 10;
            UPDATE registry_deliveries d SET priority = n.priority FROM registry_notifications n
                WHERE d.notification_id = n.id AND d.state = 'queued' AND n.priority <> 10;
            DROP INDEX registry_deliveries_due;
            CREATE INDEX registry_deliveries_due ON registry_deliveries (priority DESC, not_before, notification_id, idx)
                WHERE state = 'queued';
            ALTER TABLE registry_deliveries ADD COLUMN apns_unique_id text;
            CREATE INDEX registry_notifications_unfinished ON registry_notifications (id)
                WHERE count_queued > 0 OR count_sending > 0;
            ALTER TABLE registry_notifications ADD COLUMN expand_activity text COLLATE "C", ADD COLUMN expand_cursor text;
            CREATE INDEX registry_notifications_expanding ON registry_notifications (created_at) WHERE expand_cursor IS NOT NULL;
            """),
    ], lockKey: PostgresConnection.advisoryKey("registryd.schema_migrations"))

    /// The highest migration this build knows: a database migrated further
    /// by a newer build is refused at start.
    static var version: Int64 { migrations.migrations.last?.version ?? 0 }

    /// `registry_meta` names.
    enum Meta {
        static let cursorSecret = "cursorSecret"
        static let indexKeyCheck = "indexKeyCheck"
        /// Followed by the key id in decimal.
        static let sealingKeyCheck = "sealingKeyCheck."
        static let lastSweepAt = "lastSweepAt"
        /// The sealing key id a rotation announced: every node seals under it once it sees it.
        static let sealingKeyID = "sealingKeyID"
        /// Who holds the rotation lock (its pid and host), for the refusal of a second rotation.
        static let rotationHolder = "rotationHolder"
        /// Present once every sealed value is bound to its record (`PostgresTokenBinding`).
        static let sealedValuesBound = "sealedValuesBound"
    }

}
