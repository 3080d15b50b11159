"""The packages import one way down (ui -> engine -> rewards, storage) and without cycles,
deferred imports included.

An import moved into a function to break a cycle still ties the two modules together; the run
folder's names live in :mod:`engine.runtime.layout` so the launcher, worker and trainers need not.
"""

from __future__ import annotations

from tests.source_imports import cycles, import_graph


def test_the_cycle_finder_sees_a_cycle_through_a_deferred_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_reads_module_level_and_deferred_imports():
    graph = import_graph()
    assert "engine.runtime.layout" in graph["engine.run.launcher"]  # module level
    assert "engine.trainers.ppo.trainer" in graph["engine.run.worker"]  # inside _train_ppo
    assert "storage.paths" in graph["engine.runtime.layout"]  # inside run_dir
    assert graph["engine.runtime.layout"] <= {"storage.paths"}  # light: listing runs imports it


def test_the_graph_reaches_every_subpackage():
    """Modules two folders down are nodes of the graph, read like any other (a subpackage the
    walk missed would escape both checks below)."""
    graph = import_graph()
    assert "storage.sqlite.db" in graph["storage.runs"]
    assert "storage.sqlite.queries" in graph["storage.records.metrics"]
    assert "rewards.input_guards.structured_text" in graph["rewards.spec"]
    assert "rewards.completions.text" in graph["rewards.components.base"]
    folders = {m.rsplit(".", 1)[0] for m in graph if m.count(".") >= 2}
    assert {"storage.sqlite", "storage.records", "rewards.input_guards", "ui.api"} <= folders


def test_no_import_cycles_between_modules():
    found = cycles(import_graph())
    assert found == [], "modules that import each other (directly or around a loop):\n" + "\n".join(
        " <-> ".join(component) for component in found
    )


# Which packages each package may import: one way down, ui -> engine -> (rewards, storage).
ALLOWED = {
    "ui": {"engine", "rewards", "storage"},
    "engine": {"rewards", "storage"},
    "rewards": set(),
    "storage": set(),
}


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import that goes against :data:`ALLOWED`, as ``"importer -> imported"``."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if target.split(".")[0] != module.split(".")[0]
        and target.split(".")[0] not in ALLOWED[module.split(".")[0]]
    )


def test_the_direction_check_sees_an_upward_import():
    assert upward_imports({"rewards.a": {"engine.b"}, "ui.c": {"engine.b"}}) == [
        "rewards.a -> engine.b"
    ]


def test_packages_import_one_way_down():
    assert upward_imports(import_graph()) == []


# engine's rooms, lowest floor first: a room imports only rooms below it. engine.fields (knob,
# ConfigError) sits under all of them; the commands (cli, lab_commands, model_commands) above.
ENGINE_FLOORS = [
    "runtime",  # a run folder's names, checkpoints, devices, stop request, compile cache
    "tasks",
    "models",
    "data",
    "generation",
    "tools",
    "config",  # the run config: reads models, data, generation and tools to validate itself
    "tracking",
    "trainers",
    "planning",  # memory and micro-batch: read the config, the sampler and the trainers
    "run",  # the worker, the launcher and the preflight
    "interactive",  # the Preview's and the Playground's sampling, on loaded or run models
    "exports",
    "builds",  # the scripts that build the shipped models
]


def engine_room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "engine" and len(parts) > 2 else None


def upstairs_imports(graph: dict[str, set[str]], floors: list[str]) -> list[str]:
    """Each import of one engine room by another at its own floor or above it."""
    floor = {room: level for level, room in enumerate(floors)}
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if (room := engine_room(module)) is not None
        and (other := engine_room(target)) not in (None, room)
        and floor[other] >= floor[room]
    )


def test_the_floor_check_sees_an_import_from_above():
    graph = {"engine.tools.a": {"engine.config.b"}, "engine.config.b": {"engine.tools.c"}}
    assert upstairs_imports(graph, ["tools", "config"]) == ["engine.tools.a -> engine.config.b"]


def test_engines_rooms_import_only_the_floors_below_them():
    graph = import_graph()
    rooms = {room for module in graph if (room := engine_room(module)) is not None}
    assert rooms == set(ENGINE_FLOORS), "name each new room's floor in ENGINE_FLOORS"
    assert upstairs_imports(graph, ENGINE_FLOORS) == []
    assert {t for t in graph["engine.fields"] if t.startswith("engine.")} == set()


def test_the_charts_import_no_other_room_of_ui():
    """ui.plots draws plain data (a metric by step, a quantity's values by step) for every tab;
    a tab's state type it imported tied the charts to that tab."""
    graph = import_graph()
    reached = {
        target.split(".")[1]
        for module, targets in graph.items()
        if module.startswith("ui.plots.")
        for target in targets
        if target.startswith("ui.") and target.count(".") >= 2
    }
    assert reached <= {"plots"}, sorted(reached)
