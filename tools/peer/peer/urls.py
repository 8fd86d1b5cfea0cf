"""The library's DRF routes for APNs devices, as its README registers them: POST /device/apns/ (create,
or with UPDATE_ON_DUPLICATE_REG_ID update the device holding that token), and
GET/PUT/PATCH/DELETE /device/apns/<registration_id>/."""

from django.urls import include, path
from push_notifications.api.rest_framework import APNSDeviceViewSet
from rest_framework.routers import DefaultRouter

router = DefaultRouter()
router.register(r"device/apns", APNSDeviceViewSet)

urlpatterns = [path("", include(router.urls))]
