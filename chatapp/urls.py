from django.contrib import admin
from django.http import Http404
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from chatapp.views import (
    approvals,
    auth,
    chat,
    favicon,
    files,
    health,
    js_catalog,
    keys,
    language,
    mcp_context,
    mcp_oauth,
    sharing,
)
from chatapp.views.api_app import api as rest


def not_here(request, *args):
    raise Http404("Not used here: accounts come from an admin or a single sign-on provider.")


urlpatterns = [
    path("", chat.home, name="chat"),
    path("favicon.ico", favicon.favicon),
    path("c/new/", chat.new_conversation, name="new_conversation"),
    path("c/<int:conversation_id>/", chat.conversation, name="conversation"),
    path("c/<int:conversation_id>/earlier/", chat.earlier_exchanges, name="earlier_exchanges"),
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
    path("approvals/count/", approvals.count, name="approvals_count"),
    path("approvals/waiting/", approvals.waiting_list, name="approvals_waiting"),
    path(
        "runs/<int:run_id>/calls/<int:call_id>/<str:decision>/",
        approvals.answer_in_chat,
        name="answer_in_chat",
    ),
    path("healthz", health.healthz, name="healthz"),
    path("language/", language.set_language, name="set_language"),
    # The JavaScript strings' translations (static/js/*.js call gettext()): the pages link the
    # versioned URL ({% js_catalog_url %}), which browsers keep; the plain one is the active language's.
    path("jsi18n/", js_catalog.javascript_catalog, name="javascript_catalog"),
    path(
        "jsi18n/<str:language>/<str:version>.js",
        js_catalog.javascript_catalog,
        name="javascript_catalog_versioned",
    ),
    path("login/", auth.LoginView.as_view(), name="login"),
    path("logout/", auth.LogoutView.as_view(), name="logout"),
    # django-allauth: only the provider flow; its own login/sign-up/password pages lead to ours or nowhere.
    path("accounts/login/", RedirectView.as_view(pattern_name="login"), name="account_login"),
    path("accounts/logout/", auth.LogoutView.as_view(), name="account_logout"),
    path("accounts/signup/", RedirectView.as_view(pattern_name="login"), name="account_signup"),
    re_path(r"^accounts/(password|email|confirm-email|reauthenticate|inactive|2fa|sessions)/", not_here),
    path("accounts/oidc/<str:provider_id>/login/", auth.sso_login, name="openid_connect_login"),
    path(
        "accounts/oidc/<str:provider_id>/login/callback/", auth.sso_callback, name="openid_connect_callback"
    ),
    path("accounts/", include("allauth.urls")),
    path("audit/", include("chatapp.audit_urls")),
    path("keys/", keys.key_list, name="api_keys"),
    path("keys/<int:key_id>/revoke/", keys.revoke, name="revoke_api_key"),
    path("mcp/<int:server_id>/sign-in/", mcp_oauth.sign_in, name="mcp_sign_in"),
    path("mcp/oauth/callback/", mcp_oauth.callback, name="mcp_oauth_callback"),
    path("admin/", admin.site.urls),
    # /api/... (REST), /v1/... (OpenAI-compatible), /api/schema and /api/docs: chatapp/views/api_app.py
    path("", rest.urls),
]
