"""Reward Studio's web app: ``python app.py [--data-dir DIR] [--host H] [--port P] [--share]``.

Builds the dashboard from ``ui/`` and launches it. Works offline on the shipped default model.
Optional login from the environment (``STUDIO_AUTH="user:pass,..."`` or ``STUDIO_USERNAME`` with
``STUDIO_PASSWORD``, rate-limited by ``STUDIO_LOGIN_MAX_FAILURES`` per ``STUDIO_LOGIN_WINDOW_S``),
admins (``STUDIO_ADMINS``) and demo caps (``STUDIO_DEMO_MAX_STEPS``,
``STUDIO_DEMO_MAX_MODEL_PARAMS``, ``STUDIO_DEMO_MAX_PREVIEW_SAMPLES``,
``STUDIO_DEMO_MAX_QUEUED_RUNS``), e.g. for a Hugging Face Space, where visitors sign in with
Hugging Face and data lives in ``/data/studio`` when persistent storage is on.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

for _key, _value in (
    ("HF_HUB_DISABLE_TELEMETRY", "1"),
    ("TRL_EXPERIMENTAL_SILENCE", "1"),
    ("TOKENIZERS_PARALLELISM", "false"),
    ("GRADIO_ANALYTICS_ENABLED", "False"),
):
    os.environ.setdefault(_key, _value)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Reward Studio dashboard")
    parser.add_argument(
        "--data-dir",
        default=None,
        help="where runs are stored (default: $STUDIO_DATA_DIR, /data/studio when /data "
        "exists, else ./studio-data)",
    )
    parser.add_argument(
        "--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"), help="bind address"
    )
    parser.add_argument(
        "--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860"))
    )
    parser.add_argument("--share", action="store_true", help="create a public gradio.live link")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    args = parse_args(argv)
    from rewards.components.python_code import enforce_code_policy, restrict_code_paths
    from rewards.components.reward_model import restrict_models
    from storage.paths import resolve_data_dir
    from ui.access.identity import run_caps
    from ui.access.login import LoginGuard
    from ui.access.own_address import public_url
    from ui.access.run_slots import address_cap
    from ui.access.same_origin import shield
    from ui.factory import build_app, launch_kwargs
    from ui.shared.context import (
        PUBLIC_ENV,
        AppContext,
        DemoLimits,
        SettingsError,
        auth_from_env,
        is_public,
    )

    if args.share:  # a gradio.live link is as public as a Space: caps, identities, no code
        os.environ[PUBLIC_ENV] = "1"
    try:
        data_dir = resolve_data_dir(args.data_dir)
        auth = auth_from_env()
        guard = LoginGuard.from_env(auth) if auth else None
        # user reward code (STUDIO_ALLOW_CODE) never runs on a public app without a login
        enforce_code_policy(os.environ, public=is_public(), login=bool(auth))
        demo_limits = DemoLimits.from_env()
        run_caps()  # a bad STUDIO_DEMO_MAX_*_RUNS value stops the app here, not a run
        address_cap()  # and a bad STUDIO_DEMO_MAX_RUNS_PER_ADDRESS
        public_url()  # and a STUDIO_PUBLIC_URL that is no address
    except (SettingsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    ctx = AppContext(data_dir=data_dir, demo=demo_limits)
    restrict_code_paths(ctx.input_policy.file_allowed)  # reward code files: uploads only
    restrict_models(ctx.check_reward_model)  # reward/judge models: the policy's and demo's rules
    ctx.launcher.scan()  # runs whose worker died while the app was down become interrupted
    ctx.start_supervisor()
    logging.getLogger("app").info("Data dir: %s", data_dir)
    demo = build_app(ctx)
    try:
        demo.queue(default_concurrency_limit=4).launch(
            server_name=args.host,
            server_port=args.port,
            share=args.share,
            auth=guard.check if guard else None,
            auth_message="Reward Studio: log in with the credentials set for this app."
            if auth
            else None,
            prevent_thread_lock=True,
            **launch_kwargs(ctx),
        )
        shield(demo.server_app)  # another site's request never gets Gradio's CORS answer
        demo.block_thread()
    finally:
        ctx.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
