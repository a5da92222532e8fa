"""Review and adjudication serve every project, so their pages live in ``annotation`` (not in
``crowd``, which is for crowd platforms only), at the URLs and names they always had."""

from django.urls import resolve, reverse

from crowd import urls as crowd_urls

ROUTES = {
    ("review-list", ("s",)): "/p/s/review/",
    ("review-next", ("s",)): "/p/s/review/next/",
    ("review-item", ("s", 7)): "/p/s/review/7/",
    ("api-adjudication", ("s", 7)): "/api/projects/s/review/7/adjudication/",
}


def test_review_routes_keep_their_paths_and_are_served_by_annotation():
    for (name, args), path in ROUTES.items():
        assert reverse(name, args=args) == path
        view = resolve(path).func
        assert getattr(view, "view_class", view).__module__ == "annotation.review_views", name


def test_crowd_urls_name_no_review_page():
    assert not [p for p in crowd_urls.urlpatterns if "review" in str(p.pattern)]
