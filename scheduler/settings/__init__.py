"""The program's settings, one package: what ``config.toml`` and ``CAMPAIGN_*`` set, and a
run's options.

- :mod:`~scheduler.settings.load`: :class:`~scheduler.settings.load.Settings` (every setting,
  with its sections) and :func:`~scheduler.settings.load.load_settings`, the only way to
  build them (file, then environment);
- :mod:`~scheduler.settings.engine`, :mod:`~scheduler.settings.senders`,
  :mod:`~scheduler.settings.dashboard`, :mod:`~scheduler.settings.api`,
  :mod:`~scheduler.settings.metrics`: the sections (the engine's settings are flat keys of
  ``config.toml``; ``[senders]``, ``[dashboard]``, ``[api]`` and ``[metrics]`` are tables);
- :mod:`~scheduler.settings.run`, :mod:`~scheduler.settings.retry_rules`: a run's options,
  parsed from the campaign when it is planned and stored with the run.

Every default is written once, in the section that holds its field; nothing is copied from
one class into another. This ``__init__`` imports nothing: ``import scheduler.settings.run``
does not load the settings' loader. The ``CAMPAIGN_*`` environment is read by
:mod:`~scheduler.settings.environment`, as pydantic-settings read it, without importing it.
"""
