"""One training run, start to finish, in its own process (``python -m engine run``).

The worker owns its run's rows in SQLite: it marks the run running, streams metrics, samples and
log lines, checkpoints, and ends with ``completed``, ``stopped`` (SIGTERM: the current step
finishes and a checkpoint is saved) or ``failed`` (message and traceback stored). It never
touches another run's rows, so a crash here cannot harm other runs or the stored history.
"""

from __future__ import annotations

import logging
import os
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from datasets import Dataset

from engine.config.run_config import RunConfig
from engine.data.datasets import DatasetError, DataSpec, load_rows
from engine.data.prompts import for_trainer, prompt_format
from engine.fields import ConfigError
from engine.models.loading import ModelLoadError, load_model_and_tokenizer
from engine.planning.memory import GIB
from engine.planning.micro_batch import (
    describe,
    local_card_bytes,
    longest_prompt,
    run_estimate,
    with_default_micro_batch,
)
from engine.run.disk_check import plan_writes
from engine.run.final_model import save_final
from engine.run.oom_retry import Attempt, free_device_memory, is_out_of_memory, retry_config
from engine.runtime.checkpoints import (
    checkpoint_step,
    clean_incomplete,
    latest_checkpoint,
    load_trained_weights,
)
from engine.runtime.compile_cache import skip_cpu_isa_probe, use_compile_cache
from engine.runtime.devices import apply_cpu_share
from engine.runtime.layout import run_dir
from engine.runtime.stop_request import StopRequest, install_stop_handlers
from engine.tracking import metric_names
from engine.tracking.critic_watch import CriticWatch
from engine.tracking.heldout import HeldoutEvaluation
from engine.tracking.recorder import NullRecorder, RunRecorder, StorageLogHandler, StorageRecorder
from engine.tracking.reward_watch import ConstantRewardWatch
from engine.tracking.samples import SampleStore
from engine.tracking.trackers import point_trackers_at
from engine.trainers.callbacks import StudioCallback
from engine.trainers.compiled_layers import avoid_cudnn_attention
from engine.trainers.finite_updates import UpdateGuard
from rewards.verification.mathpool import warm_up as start_math_workers
from storage import runs as run_store
from storage.paths import db_path
from storage.sqlite.db import Database
from storage.sqlite.schema import NoteKind, RunPhase, RunStatus

logger = logging.getLogger("engine.run.worker")

# Failures caused by the run's inputs, not by a bug: reported by their message alone.
USER_ERRORS: tuple[type[Exception], ...] = (ConfigError, DatasetError, ModelLoadError)

# Recorded after the last checkpoint, so a resume from it records them again.
FINAL_EVAL_METRICS = (
    metric_names.EVAL_ACCURACY,
    metric_names.EVAL_STRICT_ACCURACY,
    metric_names.EVAL_FORMAT_RATE,
)


def is_main_process() -> bool:
    """True for the process that writes storage (rank 0 under ``accelerate launch``)."""
    return int(os.environ.get("RANK", "0")) == 0


def resume_point(folder: Path, config: RunConfig, recorder: RunRecorder) -> Path | None:
    """The newest complete checkpoint to continue from (``None``: start at step 0), with the
    rows that the run will record again dropped: those after the checkpoint, or all of them.

    What a killed save left behind is deleted first, so the same step can be saved again.
    """
    clean_incomplete(folder)
    resume_from = latest_checkpoint(folder)
    step = None if resume_from is None else checkpoint_step(resume_from)
    if step is not None:
        logger.info("Resuming from %s", resume_from.name)
        recorder.phase(RunPhase.RESUMING, step)
    final = step is not None and step >= config.training.steps
    recorder.rewind(step, redone_at_step=FINAL_EVAL_METRICS if final else ())
    return resume_from


def heldout_rows(data: DataSpec, n: int) -> list[dict[str, Any]]:
    """The first ``n`` held-out rows: the built-in task's, or a file's or hub dataset's
    ``heldout_share`` of prompts (the rows training leaves out).

    None when ``n`` is 0, when training reads split ``all`` or a named hub split (no rows are
    left out then), or when the held-out split is empty (a small file, a small share).
    """
    if n == 0:
        return []
    if data.source != "builtin" and (data.split != "train" or data.heldout_share <= 0):
        return []
    try:
        return load_rows(replace(data, split="heldout", max_rows=n))
    except DatasetError as err:
        logger.info("No held-out evaluation: %s", err)
        return []


def run(
    config: RunConfig | str | Path,
    run_id: str,
    data_dir: str | Path,
    *,
    show_progress: bool = False,
    stop: StopRequest | None = None,
) -> str:
    """Train the recorded run ``run_id`` with ``config``; returns its final status.

    ``config`` is the run's recorded config: the object itself where the caller holds it (the
    command line's foreground run, tests), else the path of the copy the launcher wrote for
    this process (:func:`engine.run.launcher.run_command`). ``stop`` is a request whose signal
    handlers the caller installed early; without one, the handlers are installed here.
    """
    apply_cpu_share()  # the launcher's share of the cores, before torch starts its threads
    data_dir = Path(data_dir)
    use_compile_cache(data_dir)  # before the first compile: a later run of a shape reuses it
    skip_cpu_isa_probe()
    avoid_cudnn_attention()  # its kernels compile at run time, once per new step width
    main = is_main_process()
    db = Database(db_path(data_dir)) if main else None
    if stop is None:
        stop = StopRequest()
        install_stop_handlers(stop)
    log_handler = None
    recorder: RunRecorder = NullRecorder()
    status = RunStatus.FAILED
    failure: dict[str, str] = {}
    try:
        if not isinstance(config, RunConfig):  # the worker's copy: the crossing, read once
            config = RunConfig.load(config)
        if db is not None:
            run_store.set_status(db, run_id, RunStatus.RUNNING, pid=os.getpid())
            recorder = ConstantRewardWatch(StorageRecorder(db, run_id), config.reward)
            if config.algorithm == "ppo":
                recorder = CriticWatch(recorder, config.ppo.value_warmup_steps)
            recorder.phase(RunPhase.STARTING)
            log_handler = StorageLogHandler(db, run_id, data_dir=data_dir)
            log_handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
            logging.getLogger().addHandler(log_handler)
        status = _train_with_retry(config, run_id, data_dir, recorder, stop, show_progress)
    except Exception as exc:  # the run fails; the process and the database stay healthy
        if isinstance(exc, USER_ERRORS):  # the message says what to fix; the trace is stored
            logger.error("Run %s failed: %s", run_id, exc)
        else:
            logger.exception("Run %s failed", run_id)
        failure = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        return RunStatus.FAILED
    finally:
        recorder.close()
        if log_handler is not None:  # before the status: a finished run's log is whole
            log_handler.flush()
            logging.getLogger().removeHandler(log_handler)
        if db is not None:
            if status != RunStatus.FAILED or failure:  # else the supervisor marks it lost
                run_store.set_status(db, run_id, status, **failure)
            db.close()
            _start_queued_runs(data_dir)
    return status


def _start_queued_runs(data_dir: Path) -> None:
    """This run's slot is free: let the next queued run start even if no UI is open."""
    from engine.run.launcher import Launcher  # the launcher starts workers: a cycle at import

    try:
        Launcher(data_dir).dispatch()
    except Exception:  # the run itself is finished and recorded; a queue hiccup must not fail it
        logger.exception("Could not start the next queued run")


@dataclass
class PreparedRun:
    """What every trainer family starts from: the config as it runs (its micro-batch sized to
    the card), the loaded model and data, the held-out evaluation and the checkpoint to resume."""

    config: RunConfig
    folder: Path
    model: Any
    tokenizer: Any
    train_rows: list[dict[str, Any]]
    evaluate: HeldoutEvaluation | None
    resume_from: Path | None
    prompt_width: int = 0  # the longest prompt in tokens, on a GPU (0: not measured)


def prepare(
    config: RunConfig,
    run_id: str,
    data_dir: Path,
    recorder: RunRecorder,
    attempt: Attempt | None = None,
) -> PreparedRun:
    """Load the model and the data, size the micro-batch (noted in ``attempt``), and find the
    checkpoint to resume."""
    folder = run_dir(data_dir, run_id)
    folder.mkdir(parents=True, exist_ok=True)
    # The reward or the held-out evaluation (correctness in math mode, always) checks answers
    # with math-verify: its workers start and warm up while the model loads.
    if config.reward.checks_math or config.training.eval_samples:
        start_math_workers()
    logger.info("Loading model %s", config.model.name_or_path)
    recorder.phase(RunPhase.LOADING_MODEL)
    spec, device = config.model, None
    if config.training.distributed == "fsdp":  # every rank loads onto the CPU; FSDP shards it
        device = "cpu"
        spec = replace(spec, dtype="bfloat16") if spec.dtype == "auto" else spec
    model, tokenizer = load_model_and_tokenizer(spec, device=device)
    train_rows = load_rows(config.data, config.tools.lookup_column)
    eval_rows = heldout_rows(config.data, config.training.eval_samples)
    logger.info("%d training prompts, %d held-out prompts", len(train_rows), len(eval_rows))
    logger.info("Prompts reach the model as %s", prompt_format(tokenizer))
    card, prompt_tokens, est = local_card_bytes(), None, None
    if card is not None:  # on a GPU, an empty micro-batch is sized to the card and the prompts
        # Each set scanned on its own: the scan reads a bounded head of the rows it is given.
        prompt_tokens = max(
            longest_prompt(tokenizer, rows) for rows in (train_rows, eval_rows) if rows
        )
        config = with_default_micro_batch(config, card, prompt_tokens)
        est = run_estimate(config, card, prompt_tokens)
    logger.info("%s", describe(config, card, prompt_tokens))
    if attempt is not None:
        attempt.micro_batch = config.per_device_batch_size()
    # Every process must take the same steps; only the main one evaluates (its results are the
    # ones recorded) while the others wait for it at the next gradient sync. Under FSDP the main
    # process cannot run the model alone (each layer's forward gathers its weights from every
    # rank), so there is no held-out evaluation.
    sharded = config.training.distributed == "fsdp"
    if eval_rows and sharded:
        logger.warning("training.distributed fsdp: held-out evaluation is skipped")
    evaluation = None
    if eval_rows and is_main_process() and not sharded:
        evaluation = HeldoutEvaluation(config, tokenizer, eval_rows, recorder)
    resume_from = resume_point(folder, config, recorder)
    if est is not None:  # beside the measured perf/peak_memory_gib, as data; after the resume
        # point's rewind, which drops every row of a run that starts from step 0
        recorder.metrics(
            0,
            {
                metric_names.ESTIMATED_PEAK: est.peak / GIB,
                metric_names.MICRO_BATCH: est.micro_batch,
            },
        )
    plan_writes(config, data_dir, resume_from, recorder)
    return PreparedRun(
        config, folder, model, tokenizer, train_rows, evaluation, resume_from, prompt_tokens or 0
    )


def _train_with_retry(
    config: RunConfig,
    run_id: str,
    data_dir: Path,
    recorder: RunRecorder,
    stop: StopRequest,
    show_progress: bool,
) -> str:
    """:func:`_train`, once more at half the micro-batch if it runs out of GPU memory
    (:mod:`engine.run.oom_retry`)."""
    attempt = Attempt()
    try:
        return _train(
            config, run_id, data_dir, recorder, stop, show_progress=show_progress, attempt=attempt
        )
    except Exception as exc:
        retry = retry_config(config, attempt.micro_batch) if is_out_of_memory(exc) else None
        if retry is None:
            raise
    # Outside the handler: the exception and its frames (the failed trainer) are gone by now.
    free_device_memory()
    ran, now = attempt.micro_batch, retry.training.micro_batch_size
    message = f"Out of GPU memory at micro-batch {ran}; retrying once at micro-batch {now}"
    logger.warning(message)
    recorder.note(0, NoteKind.OUT_OF_MEMORY_RETRY, message, {"from": ran, "to": now})
    return _train(retry, run_id, data_dir, recorder, stop, show_progress=show_progress)


def _train(
    config: RunConfig,
    run_id: str,
    data_dir: Path,
    recorder: RunRecorder,
    stop: StopRequest,
    *,
    show_progress: bool,
    attempt: Attempt | None = None,
) -> str:
    point_trackers_at(config, run_dir(data_dir, run_id))  # before TRL imports trackio
    run = prepare(config, run_id, data_dir, recorder, attempt)
    if stop.is_set():  # asked to stop while the model loaded: nothing trained, nothing to save
        logger.info("Stop requested before the first step")
        return RunStatus.STOPPED
    if run.resume_from is None:  # a resume stays "resuming" until its first step is trained
        recorder.phase(RunPhase.FIRST_GENERATION, 0)
    if run.config.algorithm == "ppo":
        return _train_ppo(run, recorder, stop, show_progress=show_progress)
    return _train_trl(run, recorder, stop, show_progress=show_progress)


def _train_ppo(
    run: PreparedRun, recorder: RunRecorder, stop: StopRequest, *, show_progress: bool
) -> str:
    from engine.trainers.ppo.trainer import PPOTrainer

    if run.config.training.activation_checkpointing:  # TRL's trainers do this themselves
        run.model.gradient_checkpointing_enable({"use_reentrant": False})
    trainer = PPOTrainer(
        run.config,
        run.model,
        run.tokenizer,
        run.train_rows,
        run.folder,
        recorder,
        stop,
        evaluate=run.evaluate,
        show_progress=show_progress,
    )
    status = trainer.train(run.resume_from)
    if status == RunStatus.COMPLETED:
        recorder.phase(RunPhase.SAVING_FINAL, trainer.last_step)
        save_final(
            trainer.accelerator, trainer.policy, run.tokenizer, run.folder, run.config.model,
            recorder, trainer.last_step,
        )  # fmt: skip
    return status


def _train_trl(
    run: PreparedRun, recorder: RunRecorder, stop: StopRequest, *, show_progress: bool
) -> str:
    # Deferred: TRL imports trackio, which reads where to write when imported (see _train).
    from engine.trainers.trl.build import build_trl_trainer

    config = run.config
    samples = SampleStore(config, recorder)
    budget = config.training.time_budget_minutes
    callback = StudioCallback(
        recorder,
        stop,
        store_samples=samples.store,
        evaluate=run.evaluate,
        eval_steps=config.training.eval_steps,
        time_budget_s=None if budget is None else budget * 60.0,
    )
    trainer = build_trl_trainer(
        config,
        run.model,
        run.tokenizer,
        Dataset.from_list(for_trainer(run.tokenizer, run.train_rows)),
        str(run.folder),
        [callback],
        show_progress=show_progress,
        before_checkpoint_publish=recorder.flush,  # a checkpoint's metrics are stored first
        record_metrics=recorder.metrics,
        prompt_width=run.prompt_width,
        update_guard=UpdateGuard(recorder),
    )
    samples.trainer = trainer
    if run.evaluate is not None:  # held-out prompts sample on the rollouts' own graph
        run.evaluate.runner = trainer.generation_runner
    resume_from = run.resume_from
    if resume_from is not None and checkpoint_step(resume_from) >= config.training.steps:
        # Killed after its last checkpoint: the Trainer would train one step too many.
        logger.info("Every step is trained; finishing from %s", resume_from.name)
        recorder.phase(RunPhase.FINISHING, config.training.steps)
        load_trained_weights(trainer.model, resume_from)
        callback.finish(trainer.model, config.training.steps)
    else:
        trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    if stop.is_set():
        return RunStatus.STOPPED
    recorder.phase(RunPhase.SAVING_FINAL, config.training.steps)
    save_final(
        trainer.accelerator, trainer.model, run.tokenizer, run.folder, config.model, recorder,
        config.training.steps,
    )  # fmt: skip
    return RunStatus.COMPLETED
