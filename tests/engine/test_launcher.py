import sys

from engine.launcher import worker_command


def test_one_gpu_runs_the_worker_directly_without_a_shell(tmp_path):
    cmd = worker_command(tmp_path / "config.yaml", "grpo-1", tmp_path, num_gpus=1)
    assert cmd[:5] == [sys.executable, "-m", "engine", "run", str(tmp_path / "config.yaml")]
    assert cmd[-4:] == ["--run-id", "grpo-1", "--data-dir", str(tmp_path)]


def test_several_gpus_go_through_accelerate_launch(tmp_path):
    cmd = worker_command(tmp_path / "config.yaml", "grpo-1", tmp_path, num_gpus=4)
    assert cmd[:3] == [sys.executable, "-m", "accelerate.commands.launch"]
    assert cmd[cmd.index("--num_processes") + 1] == "4"
    assert cmd[cmd.index("-m", 3) : cmd.index("-m", 3) + 3] == ["-m", "engine", "run"]
