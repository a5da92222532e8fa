from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.i18n import JavaScriptCatalog
from drf_spectacular.views import SpectacularSwaggerView

from annotation import api as annotation_api
from annotation import review_views
from annotation import views as annotation_views
from projects import member_api, member_views
from projects.auth import LoginView, LogoutAllView, LogoutView, PasswordResetView, TokenView
from projects.schema import CachedSchemaView
from studies import api as studies_api
from studies import audit_pages, item_views, study_pages
from studies import views as studies_views

api = [
    path("api/schema/", CachedSchemaView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/auth/token/", TokenView.as_view(), name="api-token"),
    path("api/auth/logout/", LogoutView.as_view(), name="api-logout"),
    path("api/auth/logout-all/", LogoutAllView.as_view(), name="api-logout-all"),
    path("api/projects/", studies_api.ProjectListView.as_view(), name="api-projects"),
    path(
        "api/projects/<slug:slug>/",
        studies_api.ProjectStudyView.as_view(),
        name="api-project-study",
    ),
    path("api/projects/<slug:slug>/items/", studies_api.ItemListView.as_view(), name="api-items"),
    path(
        "api/projects/<slug:slug>/progress/",
        studies_api.ProgressView.as_view(),
        name="api-progress",
    ),
    path("api/projects/<slug:slug>/import/", studies_api.ImportView.as_view(), name="api-import"),
    path(
        "api/projects/<slug:slug>/import/label-studio/",
        studies_api.LabelStudioImportView.as_view(),
        name="api-import-label-studio",
    ),
    path(
        "api/projects/<slug:slug>/annotations/import/",
        studies_api.AnnotationImportView.as_view(),
        name="api-import-annotations",
    ),
    path(
        "api/projects/<slug:slug>/imports/<int:job_id>/cancel/",
        studies_api.ImportJobCancelView.as_view(),
        name="api-import-cancel",
    ),
    path(
        "api/projects/<slug:slug>/imports/<int:job_id>/",
        studies_api.ImportJobView.as_view(),
        name="api-import-job",
    ),
    path(
        "api/projects/<slug:slug>/members/",
        member_api.MemberListView.as_view(),
        name="api-members",
    ),
    path(
        "api/projects/<slug:slug>/members/<str:username>/",
        member_api.MemberView.as_view(),
        name="api-member",
    ),
    path(
        "api/projects/<slug:slug>/invitations/",
        member_api.InvitationListView.as_view(),
        name="api-invitations",
    ),
    path(
        "api/projects/<slug:slug>/invitations/<int:invitation_id>/",
        member_api.InvitationView.as_view(),
        name="api-invitation",
    ),
    path("api/projects/<slug:slug>/export/", studies_api.ExportView.as_view(), name="api-export"),
    path("api/projects/<slug:slug>/audit/", audit_pages.AuditListView.as_view(), name="api-audit"),
    path("api/projects/<slug:slug>/next/", annotation_api.NextItemView.as_view(), name="api-next"),
    path(
        "api/projects/<slug:slug>/history/",
        annotation_api.HistoryView.as_view(),
        name="api-history",
    ),
    path(
        "api/assignments/<int:pk>/", annotation_api.AssignmentView.as_view(), name="api-assignment"
    ),
    path("api/assignments/<int:pk>/draft/", annotation_api.DraftView.as_view(), name="api-draft"),
    path(
        "api/assignments/<int:pk>/submit/", annotation_api.SubmitView.as_view(), name="api-submit"
    ),
    path("api/assignments/<int:pk>/flag/", annotation_api.FlagView.as_view(), name="api-flag"),
    path("api/assignments/<int:pk>/skip/", annotation_api.SkipView.as_view(), name="api-skip"),
    path(
        "api/projects/<slug:slug>/flags/",
        annotation_api.ProjectFlagsView.as_view(),
        name="api-flags",
    ),
    path(
        "api/projects/<slug:slug>/flags/<int:flag_id>/",
        annotation_api.FlagActionView.as_view(),
        name="api-flag-action",
    ),
    path(
        "api/projects/<slug:slug>/items/<int:item_id>/fix/",
        studies_api.ItemFixView.as_view(),
        name="api-item-fix",
    ),
    path(
        "api/projects/<slug:slug>/items/<int:item_id>/comments/",
        annotation_api.CommentsView.as_view(),
        name="api-item-comments",
    ),
    path(
        "api/projects/<slug:slug>/send-back/",
        annotation_api.SendBackView.as_view(),
        name="api-send-back",
    ),
    path(
        "api/projects/<slug:slug>/review/<int:item_id>/adjudication/",
        review_views.AdjudicationView.as_view(),
        name="api-adjudication",
    ),
]

pages = [
    path("healthz", studies_views.healthz, name="healthz"),
    path("", studies_views.home, name="home"),
    path("login/", LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Django's own password views (templates/registration/); reset mails go to EMAIL_BACKEND.
    path("password/change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path(
        "password/change/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path("password/reset/", PasswordResetView.as_view(), name="password_reset"),
    path(
        "password/reset/sent/",
        auth_views.PasswordResetDoneView.as_view(),
        name="password_reset_done",
    ),
    path(
        "password/reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path(
        "password/reset/done/",
        auth_views.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
    path("invite/<str:token>/", member_views.invitation, name="invitation"),
    path("p/new/", study_pages.study_new, name="study-new"),
    path("p/new/<slug:task_type>/", study_pages.study_new_form, name="study-new-form"),
    path(
        "formats/<slug:task_type>/<slug:name>/",
        study_pages.example_file,
        name="example-file",
    ),
    path("p/<slug:slug>/", studies_views.project_detail, name="project-detail"),
    path("p/<slug:slug>/settings/", study_pages.study_settings, name="study-settings"),
    path(
        "p/<slug:slug>/study.<str:fmt>",
        study_pages.study_download,
        name="study-download",
    ),
    path("p/<slug:slug>/members/", member_views.project_members, name="project-members"),
    path("p/<slug:slug>/audit/", audit_pages.project_audit, name="project-audit"),
    path(
        "p/<slug:slug>/members/<int:membership_id>/role/",
        member_views.member_role,
        name="project-member-role",
    ),
    path(
        "p/<slug:slug>/members/<int:membership_id>/remove/",
        member_views.member_remove,
        name="project-member-remove",
    ),
    path(
        "p/<slug:slug>/invitations/",
        member_views.invitation_create,
        name="project-invitation-create",
    ),
    path(
        "p/<slug:slug>/invitations.csv",
        member_views.invitations_csv,
        name="project-invitations-csv",
    ),
    path(
        "p/<slug:slug>/invitations/<int:invitation_id>/revoke/",
        member_views.invitation_revoke,
        name="project-invitation-revoke",
    ),
    path(
        "p/<slug:slug>/imports/<int:job_id>/cancel/",
        studies_views.project_import_cancel,
        name="project-import-cancel",
    ),
    path(
        "p/<slug:slug>/import/label-studio/",
        studies_views.project_import_label_studio,
        name="project-import-label-studio",
    ),
    path(
        "p/<slug:slug>/annotations/import/",
        studies_views.project_import_annotations,
        name="project-import-annotations",
    ),
    path("p/<slug:slug>/export/<str:fmt>/", studies_views.project_export, name="project-export"),
    path(
        "p/<slug:slug>/export/notes/<str:fmt>/",
        studies_views.project_export_notes,
        name="project-export-notes",
    ),
    path("p/<slug:slug>/items/", item_views.items_list, name="project-items"),
    path("p/<slug:slug>/items/find/", item_views.item_find_view, name="project-item-find"),
    path(
        "p/<slug:slug>/items/export/<str:fmt>/",
        item_views.items_export,
        name="project-items-export",
    ),
    path("p/<slug:slug>/items/<int:item_id>/", item_views.item_view, name="project-item"),
    path(
        "p/<slug:slug>/items/<int:item_id>/flags/<int:flag_id>/",
        item_views.item_flag_action,
        name="project-item-flag",
    ),
    path(
        "p/<slug:slug>/items/<int:item_id>/exclusion/",
        item_views.item_exclusion,
        name="project-item-exclusion",
    ),
    path(
        "p/<slug:slug>/items/<int:item_id>/fix/",
        item_views.item_fix_view,
        name="project-item-fix",
    ),
    path(
        "p/<slug:slug>/items/<int:item_id>/comments/",
        item_views.item_comment,
        name="project-item-comment",
    ),
    path("p/<slug:slug>/bundle.zip", studies_views.project_bundle, name="project-bundle"),
    path("p/<slug:slug>/annotate/", annotation_views.annotate, name="annotate"),
    path(
        "p/<slug:slug>/annotate/language/",
        annotation_views.annotation_language,
        name="annotate-language",
    ),
    # The JavaScript catalogue of the active language (every app's and locale/'s djangojs).
    path("jsi18n/", JavaScriptCatalog.as_view(), name="javascript-catalog"),
    path("p/<slug:slug>/preview/", annotation_views.annotate_preview, name="annotate-preview"),
    # Review of disagreements, for every project (annotation.review_views).
    path("p/<slug:slug>/review/", review_views.review_list, name="review-list"),
    path("p/<slug:slug>/review/next/", review_views.review_next, name="review-next"),
    path("p/<slug:slug>/review/<int:item_id>/", review_views.review_item, name="review-item"),
    path("p/<slug:slug>/agreement/", include("agreement.urls")),
    path("admin/", admin.site.urls),
]

urlpatterns = (
    api
    + pages
    + [
        path("", include("llm_judges.urls")),
        path("", include("crowd.urls")),
        path("", include("webhooks.urls")),
    ]
)

# Errors outside DRF views: JSON {"detail", "code"} under /api/, HTML pages elsewhere.
handler400 = "core.error_views.bad_request"
handler403 = "core.error_views.permission_denied"
handler404 = "core.error_views.page_not_found"
handler500 = "core.error_views.server_error"
