from django.urls import path

from chatapp.consumers import ApprovalsConsumer, ConversationConsumer

websocket_urlpatterns = [
    path("ws/conversations/<int:conversation_id>/", ConversationConsumer.as_asgi()),
    path("ws/approvals/", ApprovalsConsumer.as_asgi()),
]
