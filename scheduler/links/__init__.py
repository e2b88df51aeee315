"""Tracked links: ``{{ link("https://…") }}`` in a template becomes a short signed link on the
receiver's public address (``/r/<token>``), which redirects to the original and records the
click.

- :mod:`scheduler.links.tokens`: the token (run, CSV row, link index; HMAC-SHA256, 64 bits);
- :mod:`scheduler.links.keys`: the project's signing key (state folder) and the public base;
- :mod:`scheduler.links.render`: ``link()`` as the templates see it;
- :mod:`scheduler.links.clicks`: what counts as a click (not a link-preview fetcher);
- :mod:`scheduler.links.routes`: the receiver's ``GET /r/{token}``.
"""
