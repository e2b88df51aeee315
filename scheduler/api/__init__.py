"""The versioned HTTP API, ``/api/v1`` (issue 34): FastAPI over the same reads and actions as
the command line, behind bearer tokens (:mod:`scheduler.ledger.api_tokens`).

- :mod:`~scheduler.api.app`: the application (:func:`~scheduler.api.app.create_api`);
- :mod:`~scheduler.api.auth`: bearer authentication, roles and the failed-attempt limit;
- :mod:`~scheduler.api.schemas`: the bodies and answers (pydantic);
- :mod:`~scheduler.api.reads`: what the routes read and do, the CLI's own functions;
- :mod:`~scheduler.api.run_routes`: a run's newest events and replies, its report, a resend;
- :mod:`~scheduler.api.sender_routes`: a sender's pause, resume and retire;
- :mod:`~scheduler.api.campaign_routes`: the campaign files, a run's start, a run's replies;
- :mod:`~scheduler.api.starts`: the files' checks and a start (``campaign run``'s planning
  behind an ``Idempotency-Key``);
- :mod:`~scheduler.api.reference`: the docs site's page, from the OpenAPI document.

Nothing here is imported by the command line until ``campaign api`` (or ``serve`` with
``[api] serve = true``) runs: FastAPI stays out of every other command.
"""
