"""The WSGI application gunicorn serves. The URLconf (and with it DRF and the library's views) is
imported here, so that with gunicorn's --preload the master imports everything once before forking
and no worker pays for it in its first measured requests. No database connection is opened here:
each worker opens its own on its first request and keeps it (CONN_MAX_AGE None)."""

import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "peer.settings")
application = get_wsgi_application()
get_resolver().resolve("/device/apns/")
