"""bench/common.py: what every benchmark's result file says of where it was measured."""

import subprocess

from bench.common import measured_commit


def test_a_result_says_its_commit_and_whether_the_code_differed(tmp_path):
    """The short commit; "-dirty" once a tracked file differs from it (not for a results file,
    which the benchmark itself rewrites, nor for an untracked file)."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "model.py").write_text("one\n")
    (tmp_path / "bench" / "results" / "speed.json").write_text("{}\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    commit = git("rev-parse", "--short", "HEAD")
    assert measured_commit(tmp_path) == commit
    (tmp_path / "bench" / "results" / "speed.json").write_text('{"tokens_per_sec": 1}\n')
    (tmp_path / "notes.txt").write_text("untracked\n")
    assert measured_commit(tmp_path) == commit
    (tmp_path / "model.py").write_text("two\n")
    assert measured_commit(tmp_path) == f"{commit}-dirty"
