"""A tiny Django project around `django.contrib.admin`: third-party UI served offline for exploration.

Run it with `python -m tests.thirdparty.django_admin --port 8800` (see `__main__`). This package's own
import stays free of Django, so that `tests.thirdparty` can read the seeded credentials below without
configuring Django's global settings in the caller's process.
"""

ADMIN_USERNAME = "admin"
ADMIN_PASSWORD = "hop-admin-8c41"  # seeded superuser password: a fixture value, not a secret of anyone's
PASSWORD_ENV = "SCALEHOP_DJANGO_PASSWORD"
SETTINGS_MODULE = "tests.thirdparty.django_admin.settings"
