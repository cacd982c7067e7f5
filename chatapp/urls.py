from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from chatapp.views import chat, files, health, keys, mcp_context, sharing
from chatapp.views.api_app import api as rest

urlpatterns = [
    path("", chat.home, name="chat"),
    path("c/new/", chat.new_conversation, name="new_conversation"),
    path("c/<int:conversation_id>/", chat.conversation, name="conversation"),
    path("c/<int:conversation_id>/send/", chat.send, name="send"),
    path("c/<int:conversation_id>/rename/", chat.rename, name="rename"),
    path("c/<int:conversation_id>/delete/", chat.delete, name="delete"),
    path("c/<int:conversation_id>/restore/", chat.restore, name="restore"),
    path("c/<int:conversation_id>/settings/", chat.conversation_settings, name="conversation_settings"),
    path("c/<int:conversation_id>/context/", mcp_context.context_menu, name="context_menu"),
    path("c/<int:conversation_id>/context/attach/", mcp_context.attach, name="context_attach"),
    path("c/<int:conversation_id>/context/detach/", mcp_context.detach, name="context_detach"),
    path("c/<int:conversation_id>/context/prompt/", mcp_context.expand_prompt, name="context_prompt"),
    path("c/<int:conversation_id>/files/", files.panel, name="files_panel"),
    path("c/<int:conversation_id>/files/upload/", files.upload, name="file_upload"),
    path("c/<int:conversation_id>/files/delete/", files.delete, name="file_delete"),
    path("c/<int:conversation_id>/files.zip", files.download_all, name="files_zip"),
    path("c/<int:conversation_id>/files/download/<path:path>", files.download, name="file_download"),
    path("c/<int:conversation_id>/files/view/<path:path>", files.preview, name="file_preview"),
    path("c/<int:conversation_id>/files/raw/<path:path>", files.raw_image, name="file_raw"),
    path("c/<int:conversation_id>/export.<str:fmt>", sharing.export, name="export_conversation"),
    path("c/<int:conversation_id>/share/", sharing.share_panel, name="share_panel"),
    path("c/<int:conversation_id>/share/new/", sharing.create_share, name="create_share"),
    path("c/<int:conversation_id>/share/<int:share_id>/revoke/", sharing.revoke_share, name="revoke_share"),
    path("s/<str:token>/", sharing.shared, name="shared"),
    path("runs/<int:run_id>/cancel/", chat.cancel, name="cancel_run"),
    path("runs/<int:run_id>/regenerate/", chat.regenerate, name="regenerate"),
    path("messages/<int:message_id>/edit/", chat.edit_message, name="edit_message"),
    path("c/<int:conversation_id>/branch/", chat.switch_branch, name="switch_branch"),
    path("runs/<int:run_id>/fragment/", chat.run_fragment, name="run_fragment"),
    path("runs/<int:run_id>/links/<int:link_id>/<str:action>/", chat.answer_link, name="answer_link"),
    path("healthz", health.healthz, name="healthz"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("audit/", include("chatapp.audit_urls")),
    path("keys/", keys.key_list, name="api_keys"),
    path("keys/<int:key_id>/revoke/", keys.revoke, name="revoke_api_key"),
    path("admin/", admin.site.urls),
    # /api/... (REST), /v1/... (OpenAI-compatible), /api/schema and /api/docs: chatapp/views/api_app.py
    path("", rest.urls),
]
