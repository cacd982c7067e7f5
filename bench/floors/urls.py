from django.urls import path

from bench.floors import views

urlpatterns = [path("floor/send/<int:conversation_id>/", views.send)]
