"""The web dashboard: live pages of runs, senders and campaigns, and the actions that steer
runs (pause, resume, cancel, send again), served by FastAPI with Jinja2 templates, our own
CSS and JavaScript, and SVG charts drawn on the server.

- :mod:`~scheduler.dashboard.app`: ``create_app(settings, ledger)``, the ASGI app;
- :mod:`~scheduler.dashboard.pages`, :mod:`~scheduler.dashboard.actions`,
  :mod:`~scheduler.dashboard.live`, :mod:`~scheduler.dashboard.downloads`: its routes;
- :mod:`~scheduler.dashboard.svg`: the charts (pure functions of numbers);
- :mod:`~scheduler.dashboard.auth`, :mod:`~scheduler.dashboard.csrf`: logins, roles, and
  the token every form carries.
"""
