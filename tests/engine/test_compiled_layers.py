"""Compiled decoder layers train to the same numbers as eager ones, on CPU with dynamo's
AOTAutograd backend (the graph capture and backward split that inductor builds on)."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from engine.trainers.compiled_layers import (
    COMPILE_ENV,
    compile_decoder_layers,
    compiles_on,
    decoder_layers,
)
from tests.tiny_models import TINY_SHAPE


def _loss(model: LlamaForCausalLM, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    logits = model(input_ids=ids, attention_mask=mask).logits
    return torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())


@pytest.mark.parametrize("checkpointing", [False, True])
def test_compiled_layers_give_the_eager_loss_and_gradients(checkpointing):
    torch.manual_seed(0)
    eager = LlamaForCausalLM(LlamaConfig(**TINY_SHAPE)).eval()
    if checkpointing:  # training.activation_checkpointing recomputes the compiled layers
        eager.activation_checkpointing_enable({"use_reentrant": False})
        eager.train()  # checkpointing runs in training mode only (no dropout in this model)
    compiled = copy.deepcopy(eager)
    torch._dynamo.reset()
    assert compile_decoder_layers(compiled, backend="aot_eager") == TINY_SHAPE["num_hidden_layers"]
    for width in (7, 11):  # a new sequence length must not need another model
        ids = torch.randint(TINY_SHAPE["vocab_size"], (3, width))
        mask = torch.ones_like(ids)
        mask[0, :3] = 0  # a left-padded row
        for model in (eager, compiled):
            model.zero_grad()
            _loss(model, ids, mask).backward()
        torch.testing.assert_close(_loss(compiled, ids, mask), _loss(eager, ids, mask))
        for (name, p), q in zip(eager.named_parameters(), compiled.parameters(), strict=True):
            torch.testing.assert_close(q.grad, p.grad, msg=name)
    frames = torch._dynamo.utils.counters["frames"]
    assert frames["ok"] > 0  # the layers really went through dynamo, not around it


def test_only_decoder_models_on_an_unsharded_gpu_compile(monkeypatch):
    assert not compiles_on(torch.device("cpu"), sharded=False)
    assert not compiles_on(torch.device("cuda"), sharded=True)
    assert compiles_on(torch.device("cuda"), sharded=False)
    monkeypatch.setenv(COMPILE_ENV, "0")
    assert not compiles_on(torch.device("cuda"), sharded=False)
    assert decoder_layers(torch.nn.Linear(2, 2)) == []
    assert compile_decoder_layers(torch.nn.Linear(2, 2)) == 0


def test_attention_leaves_out_cudnn_and_keeps_the_precompiled_kernels():
    """In a fresh interpreter (the switch is process-wide): SDPA may no longer pick cuDNN's
    kernels, which compile at run time, and may still pick flash and memory-efficient ones."""
    code = (
        "import torch\n"
        "from engine.trainers.compiled_layers import avoid_cudnn_attention\n"
        "before = torch.backends.cuda.cudnn_sdp_enabled()\n"
        "avoid_cudnn_attention()\n"
        "b = torch.backends.cuda\n"
        "print(before, b.cudnn_sdp_enabled(), b.flash_sdp_enabled(), b.mem_efficient_sdp_enabled())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "False", "True", "True"]
