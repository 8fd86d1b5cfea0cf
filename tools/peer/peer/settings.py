"""The peer of `tools/bench --compare-peer`: django-push-notifications' DRF device API as its README
shows it, on the bench's PostgreSQL, for one measurement: the launch upsert (an existing APNs device
registering again with its same token).

PEER_DATABASE_URL (postgresql://USER@HOST:PORT/DB) names the database. What is set, and why:
- DEBUG off; no middleware and no authentication classes: the cheapest request path the library offers
  (APNSDeviceViewSet, which takes any caller), so that the peer is measured at its best;
- persistent database connections (CONN_MAX_AGE None): one per gunicorn worker, as a deployment tuned
  for throughput keeps them, instead of Django's default of a new connection per request
  (PEER_CONN_MAX_AGE=0 in the environment brings that default back, to measure what it costs);
- autocommit (Django's default): each statement its own transaction; PostgreSQL commits durably
  (synchronous_commit on, as the bench's server checks);
- UNIQUE_REG_ID: one device per APNs token, enforced by a unique index, as registryd keeps one owner
  per token; UPDATE_ON_DUPLICATE_REG_ID: a POST of a token already registered updates that device
  (the library's answer to an app registering again), instead of failing or adding a second row.
"""

import os
from urllib.parse import unquote, urlparse

url = urlparse(os.environ.get("PEER_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/peer"))

SECRET_KEY = "peer-benchmark-only-not-a-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "peer.urls"
WSGI_APPLICATION = "peer.wsgi.application"
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",       # the devices' user foreign key
    "rest_framework",
    "push_notifications",
]
MIDDLEWARE = []

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": url.path.lstrip("/"),
        "USER": unquote(url.username or "postgres"),
        "PASSWORD": unquote(url.password or ""),
        "HOST": url.hostname or "127.0.0.1",
        "PORT": str(url.port or 5432),
        "CONN_MAX_AGE": int(os.environ["PEER_CONN_MAX_AGE"]) if os.environ.get("PEER_CONN_MAX_AGE") else None,
    }
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
}

PUSH_NOTIFICATIONS_SETTINGS = {
    "UNIQUE_REG_ID": True,
    "UPDATE_ON_DUPLICATE_REG_ID": True,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["stderr"], "level": "WARNING"},
}
