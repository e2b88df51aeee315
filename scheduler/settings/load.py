"""Settings: ``config.toml`` first, then ``CAMPAIGN_*`` environment variables (environment wins).

Settings are built by :func:`load_settings`, never at import time; their sections are the
engine's (:mod:`scheduler.settings.engine`, flat keys), ``[senders]`` and ``[dashboard]``.
The API key only ever comes from the environment (``CAMPAIGN_API_KEY``) or from a key file
outside the repository (``api_key_file``); it is held as a :class:`pydantic.SecretStr` and
is never printed.

The settings file and every relative path in the settings (``state_dir``, ``reports_dir``,
``api_key_file``) belong to the *project* (:mod:`scheduler.core.project`), not to the current
folder: the same command run from anywhere reads the same ledger.
"""

from __future__ import annotations

import os
import tomllib
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from scheduler.core.errors import ConfigError
from scheduler.core.project import locate_project, no_project_message
from scheduler.settings.api import ApiSettings
from scheduler.settings.dashboard import DashboardSettings
from scheduler.settings.engine import EngineSettings
from scheduler.settings.environment import merged, read_environment
from scheduler.settings.metrics import MetricsSettings
from scheduler.settings.privacy import PrivacySettings
from scheduler.settings.senders import SenderCare
from scheduler.settings.webhooks import WebhookDelivery, WebhookSubscription, check_unique

DEFAULT_CONFIG_FILE = "config.toml"
#: The service client's defaults (:class:`scheduler.service.client.ServiceClient` takes them).
DEFAULT_HTTP_TIMEOUT_S = 15.0
DEFAULT_HTTP_CONCURRENCY = 64
DEFAULT_OPT_OUT_WORDS = (
    "SAIR",
    "PARAR",
    "CANCELAR",
    "DESCADASTRAR",
    "STOP",
    "UNSUBSCRIBE",
    "CANCEL",
    "QUIT",
)


class Settings(BaseModel):
    """Every setting of the program; see ``config.example.toml`` for what each one means.

    Built, as pydantic-settings built it, from the values given and, for the fields not
    given, the ``CAMPAIGN_*`` environment (:mod:`scheduler.settings.environment`);
    :func:`load_settings` gives it the file's values the environment does not set."""

    model_config = ConfigDict(extra="forbid", validate_default=True)

    project_dir: Path | None = None
    base_url: str | None = None
    api_key: SecretStr | None = None
    api_key_file: Path | None = None
    database_url: str | None = None
    state_dir: Path = Path("state")
    reports_dir: Path = Path("reports")

    http_timeout_s: float = Field(default=DEFAULT_HTTP_TIMEOUT_S, gt=0)
    http_concurrency: int = Field(default=DEFAULT_HTTP_CONCURRENCY, ge=1, le=1024)

    webhook_url: str | None = None
    webhook_token: SecretStr | None = None
    webhook_secret: SecretStr | None = None
    receiver_host: str = "127.0.0.1"
    # None: a free port, kept in the state folder for the next process (see tracking.identity)
    receiver_port: int | None = Field(default=None, ge=0, le=65535)
    max_event_bytes: int = Field(default=1_000_000, ge=1024)
    # `campaign serve` workers on PostgreSQL: a dead worker's senders move this long after
    # its last renewal (renewed every third of it); also how stale a worker's heartbeat is
    # before it no longer counts as live.
    worker_lease_s: float = Field(default=15.0, ge=0.5, le=600)
    # `campaign serve` plans each scheduled run in a child process; one still planning after
    # this long is stopped and its run marked failed (scheduler.usecases.plan_process).
    plan_limit_s: float = Field(default=900.0, gt=0)

    # The engine's settings: flat keys of config.toml and CAMPAIGN_* (see load_settings).
    engine: EngineSettings = Field(default_factory=EngineSettings)
    # After an SMS or voice run, how long `campaign run` waits for outstanding reports.
    report_wait_s: float = Field(default=30.0, ge=0)

    # How the engine looks after the senders: health rules, warm-up ramps ([senders]).
    senders: SenderCare = Field(default_factory=SenderCare)
    # The web dashboard: where it listens, `campaign serve` serving it, logins ([dashboard]).
    dashboard: DashboardSettings = Field(default_factory=DashboardSettings)
    # The HTTP API: where `campaign api` listens, `campaign serve` serving it ([api]).
    api: ApiSettings = Field(default_factory=ApiSettings)
    # /metrics: `campaign serve`'s own metrics port, a scraper's token ([metrics]).
    metrics: MetricsSettings = Field(default_factory=MetricsSettings)
    # Retention and the erasure key ([privacy]; see docs/privacy.md).
    privacy: PrivacySettings = Field(default_factory=PrivacySettings)
    # Outgoing webhooks: [[webhooks]] subscriptions, [webhook_delivery] back-off (webhooks.py).
    webhooks: list[WebhookSubscription] = Field(default_factory=list)
    webhook_delivery: WebhookDelivery = Field(default_factory=WebhookDelivery)

    opt_out_words: list[str] = Field(default_factory=lambda: list(DEFAULT_OPT_OUT_WORDS))
    reject_calls: bool = False
    reject_calls_reply: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _environment(cls, data: Any) -> Any:
        """The environment under the given values (a table given both ways: merged)."""
        if not isinstance(data, dict):
            return data
        return merged(read_environment(cls.model_fields), data)

    @field_validator("webhooks")
    @classmethod
    def _unique_webhooks(cls, value: list[WebhookSubscription]) -> list[WebhookSubscription]:
        return check_unique(value)

    @field_validator("base_url")
    @classmethod
    def _strip_slash(cls, value: str | None) -> str | None:
        value = value.strip() if value else value
        return value.rstrip("/") if value else None

    @property
    def service_configured(self) -> bool:
        """Whether the user named a service at all (an address, a key or a key file)."""
        return bool(self.base_url or self.api_key is not None or self.api_key_file)

    def service_endpoint(self) -> tuple[str, str] | None:
        """``(base_url, key)`` of the configured service; ``None`` when none is configured.

        Half a configuration (an address without a key, or a key without an address) is a
        :class:`ConfigError` naming the missing half: the embedded sandbox never stands in
        for a service the user configured, since its results would be invented.
        """
        if not self.service_configured:
            return None
        key = self.resolved_api_key()
        if self.base_url and key:
            return self.base_url, key
        if self.base_url:
            from urllib.parse import urlsplit

            host = urlsplit(self.base_url).netloc or self.base_url
            where = (f"api_key_file {self.api_key_file} is empty" if self.api_key_file
                     else "CAMPAIGN_API_KEY is empty or unset")
            raise ConfigError(
                f"a service is configured (base_url {host}) but no API key ({where}): set "
                "CAMPAIGN_API_KEY (or api_key_file) to the account's key; nothing was sent, "
                "and nothing goes to the sandbox instead")
        raise ConfigError(
            "an API key is configured but no service address (base_url): set "
            "CAMPAIGN_BASE_URL (or base_url in config.toml) to the service's address; unset "
            "the key to use the embedded sandbox")

    def retry_horizon(self) -> timedelta:
        """How long the service retries a webhook (``webhook_retry_horizon_s``)."""
        return self.engine.retry_horizon()

    def engine_overrides(self) -> dict[str, Any]:
        """This process's part of a run's options (``DispatchOptions.for_run`` overrides):
        the engine's section, whole."""
        return {"engine": self.engine}

    def state_path(self) -> Path:
        """The state folder (the ledger, the receiver's identity); needs a project."""
        if self.state_dir.is_absolute():
            return self.state_dir
        if self.project_dir is None:
            raise ConfigError(no_project_message())
        return self.project_dir / self.state_dir

    def reports_path(self) -> Path:
        """The reports folder: absolute, or under the project (the cwd outside projects)."""
        if self.reports_dir.is_absolute():
            return self.reports_dir
        return (self.project_dir or Path.cwd()) / self.reports_dir

    def resolved_api_key(self) -> str | None:
        """The API key from the environment, else from ``api_key_file``; ``None`` when unset."""
        if self.api_key is not None:
            return self.api_key.get_secret_value().strip() or None
        if self.api_key_file is not None:
            try:
                return self.api_key_file.expanduser().read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise ConfigError(
                    f"api_key_file {self.api_key_file}: cannot be read ({exc.strerror})"
                ) from None
        return None

    def resolved_database_url(self) -> str:
        """The SQLAlchemy URL of the ledger: the setting, else SQLite in ``state_dir``."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.state_path() / 'campaign.db').as_posix()}"


def _problems(exc: ValidationError) -> list[str]:
    return [f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
            for err in exc.errors()]


def _read_config_file(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None
    if "api_key" in data:
        raise ConfigError(
            f"{path}: api_key must not be written in the settings file; set CAMPAIGN_API_KEY "
            "or point api_key_file at a file outside the repository"
        )
    return data


def load_settings(config_file: Path | str | None = None, *, near: Path | None = None,
                  **overrides: Any) -> Settings:
    """Build the settings: the TOML file, then the environment, then explicit ``overrides``.

    The project is found from ``near`` (a campaign file) or the current folder (see
    :mod:`scheduler.core.project`); the settings file is ``CAMPAIGN_CONFIG``, else the project's
    ``config.toml``. Relative paths are made absolute under the project.
    """
    root = overrides.pop("project_dir", None) or locate_project(near)
    default_file = (root / DEFAULT_CONFIG_FILE) if root else Path(DEFAULT_CONFIG_FILE)
    path = Path(config_file or os.environ.get("CAMPAIGN_CONFIG") or default_file)
    if os.environ.get("CAMPAIGN_CONFIG") and not path.is_file():
        raise ConfigError(f"CAMPAIGN_CONFIG={path}: no such file")
    file_values = _read_config_file(path) if path.is_file() else {}
    engine_names = EngineSettings.model_fields.keys()
    env_names = {f"CAMPAIGN_{name.upper()}" for name in (*Settings.model_fields, *engine_names)}
    from_env = {k for k in env_names if k in os.environ}
    # Environment wins over the file: drop file keys the environment also sets.
    values = {
        k: v for k, v in file_values.items() if f"CAMPAIGN_{k.upper()}" not in from_env
    }
    values.update(overrides)
    values["project_dir"] = root
    # The engine's keys are flat in the file and the environment; they make its section.
    engine_values = {name: values.pop(name) for name in engine_names if name in values}
    problems: list[str] = []
    if "engine" in values:  # a section of the model, not a key of the file
        problems.append("engine: Extra inputs are not permitted")
    try:
        engine_env = read_environment(EngineSettings.model_fields)
        values["engine"] = EngineSettings(**merged(engine_values, engine_env))
    except ValidationError as exc:
        problems += _problems(exc)
    try:
        settings = Settings(**values)
    except ValidationError as exc:
        problems += _problems(exc)
    if problems:
        raise ConfigError(f"settings ({path} and CAMPAIGN_* environment): "
                          f"{'; '.join(problems)}")
    if root is not None and settings.api_key_file and not settings.api_key_file.is_absolute():
        key_file = settings.api_key_file.expanduser()
        if not key_file.is_absolute():
            settings.api_key_file = root / key_file
    return settings
