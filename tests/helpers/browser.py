"""The ATTENTION tab as a user opens it: `tensorboard --logdir` and a headless Chromium driven
by Selenium (Debian's chromium and chromium-driver), for the browser tests and
bench/typed_sentence.py."""

import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path


def browser_missing() -> str:
    """Why no headless Chromium can run here ('' when it can)."""
    if shutil.which("chromium") and shutil.which("chromedriver"):
        return ""
    return "needs chromium and chromedriver (Debian: apt install chromium chromium-driver)"


def headless_chromium(width: int = 1400, height: int = 1000):
    """A Selenium driver of headless Chromium; the caller quits it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={width},{height}"):
        options.add_argument(argument)
    return webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))


class TensorBoard:
    """`tensorboard --logdir LOGDIR` as a user starts it, on 127.0.0.1 and a port of its choosing."""

    def __init__(self, logdir: Path) -> None:
        command = [
            str(Path(sys.executable).parent / "tensorboard"),
            "--logdir",
            str(logdir),
            "--host",
            "127.0.0.1",
            "--port",
            "0",
        ]
        self.process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.url = ""
        found = threading.Event()

        def read() -> None:  # TensorBoard says where it serves on stderr
            for line in self.process.stderr:
                self.lines.append(line)
                if match := re.search(r"at (http://\S+?)/?(\s|$)", line):
                    self.url = match[1]
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(timeout=120):
            self.process.kill()
            raise AssertionError("tensorboard did not start:\n" + "".join(self.lines))

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def wait_for(driver, condition, what: str, timeout: float = 60):
    """`condition(driver)`'s first true value, polled until `timeout` seconds."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: condition(d), message=f"waited for {what}")
