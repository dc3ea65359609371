from django.contrib.auth import views as auth_views
from django.urls import path

from apps.accounts import views

urlpatterns = [
    path("accounts/login/", views.login, name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
]
