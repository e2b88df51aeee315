"""The web dashboard: live pages of runs, senders and campaigns, and the actions that steer
runs (pause, resume, cancel, send again), served by FastAPI with Jinja2 templates, our own
CSS and JavaScript, and SVG charts drawn on the server.

- :mod:`~scheduler.dashboard.app`: ``create_app(settings, ledger)``, the ASGI app;
- :mod:`~scheduler.dashboard.pages`, :mod:`~scheduler.dashboard.live` (server-sent events),
  :mod:`~scheduler.dashboard.actions`, :mod:`~scheduler.dashboard.downloads`: its routes;
  :mod:`~scheduler.dashboard.steering`: what the buttons do, through the ledger's calls;
- :mod:`~scheduler.dashboard.web`: the shared state, templates and rendering;
  :mod:`~scheduler.dashboard.errors`: every mistake as a page;
  :mod:`~scheduler.dashboard.headers`: timing and security headers on every answer;
- :mod:`~scheduler.dashboard.svg`: the charts (pure functions of numbers);
  :mod:`~scheduler.dashboard.campaign_files`: the campaign files and their checks;
  :mod:`~scheduler.dashboard.shared`: one read per watched page, shared by its streams;
- :mod:`~scheduler.dashboard.auth`, :mod:`~scheduler.dashboard.csrf`: logins, roles, and
  the token every form carries.
"""
