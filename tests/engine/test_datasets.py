"""Loading prompt rows from the built-in task and from files, with named validation errors."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from engine.data.datasets import DatasetError, DataSpec, load_rows, parse_gold, rows_to_dataset


def write_jsonl(path, records):
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


GSM = [
    {"question": "Tom has 3 apples and buys 4. How many?", "answer": "3+4=7\n#### 7"},
    {"question": "A pen costs $1,200. Two pens?", "answer": "2*1200=2400\n#### 2,400"},
]


def test_builtin_rows():
    rows = load_rows(DataSpec(source="builtin", split="heldout", max_rows=6))
    assert len(rows) == 6 and rows[0]["id"].startswith("arith-heldout")
    assert load_rows(DataSpec(max_rows=3)) == load_rows(DataSpec(max_rows=3))


def test_jsonl_with_column_mapping_and_gsm8k_golds(tmp_path):
    path = write_jsonl(tmp_path / "gsm.jsonl", GSM)
    spec = DataSpec(
        source="file", path=str(path), split="all", prompt_column="question", system_prompt="Sys"
    )
    rows = load_rows(spec)
    assert [r["answer"] for r in rows] == ["7", "2400"]
    assert rows[0]["prompt"] == [
        {"role": "system", "content": "Sys"},
        {"role": "user", "content": GSM[0]["question"]},
    ]
    assert rows[1]["id"] == "gsm-00001" and rows[1]["difficulty"] == 0


def test_csv_and_parquet_and_system_column(tmp_path):
    frame = pd.DataFrame(
        {"q": ["What is 2+2?", "What is 3+3?"], "a": ["4", "6"], "sys": ["Be brief.", ""]}
    )
    frame.to_csv(tmp_path / "d.csv", index=False)
    frame.to_parquet(tmp_path / "d.parquet")
    for name in ("d.csv", "d.parquet"):
        spec = DataSpec(
            source="file",
            path=str(tmp_path / name),
            split="all",
            prompt_column="q",
            answer_column="a",
            system_column="sys",
        )
        rows = load_rows(spec)
        assert rows[0]["prompt"][0] == {"role": "system", "content": "Be brief."}
        assert rows[1]["prompt"] == [{"role": "user", "content": "What is 3+3?"}]
        assert [r["answer"] for r in rows] == ["4", "6"]


def test_chat_message_prompts(tmp_path):
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}]
    path = write_jsonl(tmp_path / "chat.jsonl", [{"prompt": msgs, "answer": 1, "id": "x1"}])
    rows = load_rows(DataSpec(source="file", path=str(path), split="all"))
    assert rows == [{"id": "x1", "prompt": msgs, "answer": "1", "difficulty": 0}]


def test_file_split_holds_out_prompts_never_seen_in_training(tmp_path):
    records = [{"prompt": f"What is {i} + {i % 7}?", "answer": str(i + i % 7)} for i in range(300)]
    records += records[:50]  # duplicated prompts must land on the same side
    path = write_jsonl(tmp_path / "many.jsonl", records)
    rows = {
        split: load_rows(DataSpec(source="file", path=str(path), split=split))
        for split in ("train", "heldout", "all")
    }
    prompts = {k: {r["prompt"][0]["content"] for r in v} for k, v in rows.items()}
    assert not prompts["train"] & prompts["heldout"]
    assert prompts["train"] | prompts["heldout"] == prompts["all"]
    assert len(rows["all"]) == 350 and len(rows["train"]) + len(rows["heldout"]) == 350
    assert 10 <= len(prompts["heldout"]) <= 55
    assert len(load_rows(DataSpec(source="file", path=str(path), max_rows=7))) == 7
    with pytest.raises(DatasetError, match=r"split 'heldout' of .* has no rows"):
        load_rows(DataSpec(source="file", path=str(path), split="heldout", heldout_share=0.0))
    with pytest.raises(DatasetError, match="split: must be one of"):
        DataSpec(source="file", path=str(path), split="test")


def test_rows_to_dataset():
    ds = rows_to_dataset(load_rows(DataSpec(max_rows=5)))
    assert len(ds) == 5 and ds[0]["prompt"][1]["role"] == "user"


def test_parse_gold():
    assert parse_gold("work\n#### 1,234") == "1234"
    assert parse_gold(42) == "42"
    assert parse_gold("x #### 3", "plain") == "x #### 3"
    with pytest.raises(DatasetError, match="####"):
        parse_gold("no marker", "gsm8k")


@pytest.mark.parametrize(
    ("records", "kwargs", "message"),
    [
        (GSM, {}, r"column 'prompt' \(prompt_column\) not found; the dataset's columns are"),
        (GSM, {"prompt_column": "question", "answer_column": "gold"}, r"column 'gold'"),
        (
            [{"question": "Q1", "answer": "1"}, {"question": "  ", "answer": "2"}],
            {"prompt_column": "question"},
            r"column 'question' \(prompt_column\) is empty in 1 of 2 rows \(rows 1\)",
        ),
        (
            [{"question": "Q1", "answer": ""}],
            {"prompt_column": "question"},
            r"column 'answer' \(answer_column\) is empty in every row",
        ),
        (
            [{"question": "x" * 50, "answer": "1"}, {"question": "ok", "answer": "2"}],
            {"prompt_column": "question", "max_prompt_chars": 20},
            r"1 of 2 prompts are longer than max_prompt_chars=20 \(longest 50 chars; rows 0\)",
        ),
        (
            [{"question": "Q", "answer": "1", "level": "hard"}],
            {"prompt_column": "question", "difficulty_column": "level"},
            r"row 0: column 'level' \(difficulty_column\) must hold integers",
        ),
        (
            [{"prompt": [{"role": "robot", "content": "hi"}], "answer": "1"}],
            {},
            r"row 0: prompt message 0 role must be one of",
        ),
    ],
)
def test_validation_errors_name_the_problem(tmp_path, records, kwargs, message):
    path = write_jsonl(tmp_path / "data.jsonl", records)
    with pytest.raises(DatasetError, match=message):
        load_rows(DataSpec(source="file", path=str(path), **kwargs))


def test_no_rows(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="has no rows"):
        load_rows(DataSpec(source="file", path=str(path)))


def test_not_utf8(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes("prompt,answer\ncaf\xe9 cost?,3\n".encode("latin-1"))
    with pytest.raises(DatasetError, match=r"not valid UTF-8 \(byte 17, line 2\)"):
        load_rows(DataSpec(source="file", path=str(path)))


def test_oversized_file(tmp_path):
    path = write_jsonl(tmp_path / "big.jsonl", [{"prompt": "p" * 3000, "answer": "1"}])
    with pytest.raises(DatasetError, match=r"big.jsonl' is 0.0 MB, over the 0.001 MB limit"):
        load_rows(DataSpec(source="file", path=str(path), max_file_mb=0.001))


def test_bad_json_line_missing_file_and_type(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "a", "answer": "1"}\n{oops\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad\.jsonl line 2 is not valid JSON"):
        load_rows(DataSpec(source="file", path=str(path)))
    with pytest.raises(DatasetError, match="does not exist"):
        load_rows(DataSpec(source="file", path=str(tmp_path / "nope.jsonl")))
    (tmp_path / "d.txt").write_text("x", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"has type '.txt'; allowed"):
        load_rows(DataSpec(source="file", path=str(tmp_path / "d.txt")))


def test_spec_validation():
    with pytest.raises(DatasetError, match="source: must be one of"):
        DataSpec(source="ftp")
    with pytest.raises(DatasetError, match="path: is required for source 'file'"):
        DataSpec(source="file")
    with pytest.raises(DatasetError, match="split: must be one of"):
        DataSpec(split="test")
    with pytest.raises(DatasetError, match="unknown field; allowed"):
        DataSpec.from_dict({"source": "builtin", "colour": "red"})
    spec = DataSpec(source="hub", path="openai/gsm8k", config_name="main")
    assert DataSpec.from_dict(spec.to_dict()) == spec


def test_hub_offline_error_says_how_to_fix(monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    spec = DataSpec(source="hub", path="no-such-owner/no-such-dataset-xyz", split="train")
    with pytest.raises(DatasetError, match=r"network access is off.*source 'file'"):
        load_rows(spec)
