"""Deterministic seed data: users, groups with permissions, flatpages, redirects and admin log entries.

Dates are fixed offsets before the seeding day (midnight UTC), so that the admin's date filters (today,
past 7 days, this month, this year) pick different users whatever the day.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from tests.thirdparty.django_admin import ADMIN_PASSWORD, ADMIN_USERNAME

# username, first, last, staff, active, days before today, groups
USERS = [
    ("grace", "Grace", "Hopper", True, True, 0, ["Editors"]),
    ("linus", "Linus", "Torvalds", True, True, 3, ["Support"]),
    ("margaret", "Margaret", "Hamilton", True, True, 12, ["Editors", "Auditors"]),
    ("alan", "Alan", "Turing", False, True, 45, []),
    ("barbara", "Barbara", "Liskov", False, True, 200, ["Auditors"]),
    ("ken", "Ken", "Thompson", False, False, 500, ["Support"]),
]
GROUPS = {
    "Editors": ["add_flatpage", "change_flatpage", "view_flatpage", "add_redirect", "change_redirect", "view_redirect"],
    "Support": ["view_user", "change_user", "view_group"],
    "Auditors": ["view_user", "view_group", "view_flatpage", "view_redirect", "view_site", "view_logentry"],
}
# url, title, content (HTML), registration required
FLATPAGES = [
    (
        "/",
        "Welcome",
        "<p>This small site is run with Django's admin.</p><p>See <a href='/about/'>about us</a>, "
        "the <a href='/help/faq/'>FAQ</a> or the <a href='/contact/'>contact page</a>.</p>",
        False,
    ),
    (
        "/about/",
        "About us",
        "<p>We are a small team that writes about computing history.</p>"
        "<ul><li>Founded in 1998</li><li>Six writers</li><li>One cat</li></ul>",
        False,
    ),
    ("/contact/", "Contact", "<p>Write to <a href='mailto:team@example.org'>team@example.org</a>.</p>", False),
    (
        "/help/faq/",
        "Frequently asked questions",
        "<h2>Can I write for you?</h2><p>Yes: send a pitch.</p><h2>Do you pay?</h2><p>Only in coffee.</p>",
        False,
    ),
    ("/privacy/", "Privacy policy", "<p>We keep no data beyond what the server logs.</p>", False),
    ("/members/", "Members area", "<p>Notes for logged-in writers only.</p>", True),
]
# old path, new path ("" = 410 Gone)
REDIRECTS = [
    ("/about-us/", "/about/"),
    ("/faq/", "/help/faq/"),
    ("/old-contact/", "/contact/"),
    ("/blog/", ""),
]


def seed(domain: str) -> None:
    """Fill a freshly migrated database; `domain` (host:port) is the Site's, so "View on site" stays local."""
    from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
    from django.contrib.auth.models import Group, Permission, User
    from django.contrib.contenttypes.models import ContentType
    from django.contrib.flatpages.models import FlatPage
    from django.contrib.redirects.models import Redirect
    from django.contrib.sites.models import Site

    today = datetime.combine(datetime.now(UTC).date(), time(9, 30), tzinfo=UTC)
    site = Site.objects.get(pk=1)
    site.domain, site.name = domain, "Computing history notes"
    site.save()

    admin = User.objects.create_superuser(
        ADMIN_USERNAME, "admin@example.org", ADMIN_PASSWORD, first_name="Ada", last_name="Lovelace"
    )
    admin.date_joined = today - timedelta(days=900)
    admin.save()
    groups = {}
    for name, codenames in GROUPS.items():
        group = Group.objects.create(name=name)
        group.permissions.set(Permission.objects.filter(codename__in=codenames))
        groups[name] = group
    for username, first, last, staff, active, days, member_of in USERS:
        user = User.objects.create_user(
            username,
            f"{username}@example.org",
            f"{username}-pass-1",
            first_name=first,
            last_name=last,
            is_staff=staff,
            is_active=active,
        )
        user.date_joined = today - timedelta(days=days, hours=days % 5)
        user.save()
        user.groups.set(groups[g] for g in member_of)

    pages = []
    for url, title, content, private in FLATPAGES:
        page = FlatPage.objects.create(url=url, title=title, content=content, registration_required=private)
        page.sites.add(site)
        pages.append(page)
    for old, new in REDIRECTS:
        Redirect.objects.create(site=site, old_path=old, new_path=new)

    page_type = ContentType.objects.get_for_model(FlatPage)
    for i, (page, flag, message) in enumerate(
        [(pages[1], ADDITION, "Added."), (pages[3], CHANGE, '[{"changed": {"fields": ["Content"]}}]')]
    ):
        entry = LogEntry.objects.create(
            user=admin,
            content_type=page_type,
            object_id=str(page.pk),
            object_repr=str(page),
            action_flag=flag,
            change_message=message,
        )
        LogEntry.objects.filter(pk=entry.pk).update(action_time=today - timedelta(days=2 - i))
