from django.contrib.auth import views as auth_views
from django.urls import path

from apps.accounts import key_views, views

urlpatterns = [
    path("accounts/login/", views.login, name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("account/keys/", key_views.keys, name="api-keys"),
    path("account/keys/<str:key_id>/revoke/", key_views.key_revoke, name="api-key-revoke"),
]
