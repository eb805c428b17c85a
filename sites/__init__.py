"""The bundled demo websites (shop, forum, classifieds): seeded, resettable, offline."""

from sites.runner import SITE_NAMES, SiteServers, serve_sites

__all__ = ["SITE_NAMES", "SiteServers", "serve_sites"]
