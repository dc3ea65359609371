from django.urls import path

from apps.ledger import views

app_name = "ledger"

urlpatterns = [
    path("audit/log/", views.log, name="log"),
    path("audit/log/verify/", views.verify, name="verify"),
    path("audit/log/<int:seq>/", views.entry, name="entry"),
    path("audit/log/<int:seq>/proof.json", views.entry_proof, name="proof"),
    path("audit/anchors/", views.anchors, name="anchors"),
]
