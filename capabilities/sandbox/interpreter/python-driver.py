# PAI code context driver for Python: one IPython shell kept alive between cells.
#
# Started by @pai/sandbox (`createCodeContext`, `runCode`) as `python3 -u -c <this file>` inside the sandbox, as
# the sandbox user. Requests arrive as JSON lines on stdin ({"type": "execute", "id", "code"}); events leave on
# stdout as lines that start with "\x1ePAI" + PAI_CODE_TOKEN followed by JSON, so text that a child process writes
# straight to file descriptor 1 stays apart from them (it reaches the host as stdout). The host interrupts a cell
# with SIGINT to this process (a KeyboardInterrupt, the shell and its state kept).
import base64
import io
import json
import os
import signal
import sys
import threading

TOKEN = os.environ.pop("PAI_CODE_TOKEN", "")
RECORD = os.environ.pop("PAI_CODE_CONTEXT", "")
MARK = ("\x1ePAI" + TOKEN).encode()
_write_lock = threading.Lock()
_current = {"id": None, "running": False}


def _write_all(data):
    view = memoryview(data)
    while view:
        written = os.write(1, view)
        view = view[written:]


def emit(event):
    """Sends one event line; SIGINT is held off while a line is written so no line is ever cut."""
    line = MARK + json.dumps(event, separators=(",", ":"), default=repr).encode() + b"\n"
    main = threading.current_thread() is threading.main_thread()
    if main:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        with _write_lock:
            _write_all(line)
    finally:
        if main:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


class EventStream(io.TextIOBase):
    """sys.stdout / sys.stderr of the user's code: text sent as events, by line or every 50 ms."""

    def __init__(self, name):
        super().__init__()
        self.name = name
        self._pending = []
        self._size = 0
        self._lock = threading.Lock()

    encoding = "utf-8"
    errors = "replace"

    def writable(self):
        return True

    def isatty(self):
        return False

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not %s" % type(text).__name__)
        if not text:
            return 0
        with self._lock:
            self._pending.append(text)
            self._size += len(text)
            full = self._size >= 8192
        if full:
            self.flush()
        return len(text)

    def flush(self):
        with self._lock:
            text = "".join(self._pending)
            self._pending = []
            self._size = 0
        if text and _current["id"] is not None:
            emit({"type": self.name, "id": _current["id"], "text": text})


def _flusher(streams):
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    while True:
        threading.Event().wait(0.05)
        for stream in streams:
            try:
                stream.flush()
            except Exception:
                pass


def _mime_bundle(data):
    """A display's MIME bundle as JSON: bytes (PNG, JPEG) in base64, JSON as it is, the rest as text."""
    bundle = {}
    for mime, value in (data or {}).items():
        if isinstance(value, (bytes, bytearray)):
            value = base64.b64encode(bytes(value)).decode("ascii")
        elif mime == "application/json" or mime.endswith("+json"):
            value = value
        elif isinstance(value, (list, tuple)):
            value = "".join(str(part) for part in value)
        elif not isinstance(value, str):
            value = str(value)
        bundle[mime] = value
    return bundle


def main():
    # SIGINT interrupts a running cell (KeyboardInterrupt) and nothing else: one that arrives as a cell ends is
    # dropped, so it can neither cut the driver's own lines nor reach the next cell. (The agent may start programs
    # with SIGINT ignored: this handler is installed either way.)
    def on_sigint(signum, frame):
        if _current["running"]:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    # IPython's and matplotlib's own files go to /tmp, not the workspace (HOME); figures use the inline backend.
    os.environ.setdefault("IPYTHONDIR", "/tmp/.pai-ipython")
    os.environ.setdefault("MPLCONFIGDIR", "/tmp/.pai-matplotlib")
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    out = EventStream("stdout")
    err = EventStream("stderr")
    try:
        from IPython.core.displayhook import DisplayHook
        from IPython.core.displaypub import DisplayPublisher
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config
    except ImportError as error:
        emit({"type": "fatal", "code": "missing", "message": "IPython is not installed in this sandbox image (%s): "
              "install Debian's python3-ipython (or pip's ipython), or use PAI's sandbox image" % error})
        return 3

    class Publisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            out.flush()
            err.flush()
            if _current["id"] is not None:
                emit({"type": "display", "id": _current["id"], "data": _mime_bundle(data)})

        def clear_output(self, wait=False):
            pass

    class Hook(DisplayHook):
        def start_displayhook(self):
            pass

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            out.flush()
            err.flush()
            if _current["id"] is not None:
                emit({"type": "result", "id": _current["id"], "data": _mime_bundle(format_dict)})

        def finish_displayhook(self):
            pass

    class Shell(InteractiveShell):
        error = None

        def _showtraceback(self, etype, evalue, stb):
            self.error = {
                "name": getattr(etype, "__name__", "Error"),
                "value": str(evalue),
                "traceback": self.InteractiveTB.stb2text(stb),
            }

    sys.stdout = out
    sys.stderr = err
    threading.Thread(target=_flusher, args=((out, err),), daemon=True).start()
    config = Config()
    config.HistoryManager.enabled = False
    shell = Shell.instance(config=config, displayhook_class=Hook, display_pub_class=Publisher, colors="NoColor")

    if RECORD:
        # The context's record, beside the others of this sandbox: it tells a later process (after a wake, or
        # a runtime that reattached) that this context existed, and this driver's pid.
        try:
            record = json.loads(RECORD)
            record["pid"] = os.getpid()
            directory = "/tmp/.pai-code-contexts"
            os.makedirs(directory, exist_ok=True)
            path = os.path.join(directory, record["id"] + ".json")
            with open(path + ".new", "w") as file:
                json.dump(record, file)
            os.replace(path + ".new", path)
        except Exception as error:
            emit({"type": "warning", "message": "cannot record the context: %s" % error})

    # Requests keep file descriptor 0 to themselves: the cell's input() and its child processes read /dev/null.
    stdin = os.fdopen(os.dup(0), "rb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(os.devnull, "r")
    emit({"type": "ready", "pid": os.getpid()})
    while True:
        line = stdin.readline()
        if not line:
            return 0
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if request.get("type") != "execute":
            continue
        request_id = request.get("id")
        _current["id"] = request_id
        shell.error = None
        _current["running"] = True
        try:
            shell.run_cell(request.get("code", ""), store_history=True)
        except KeyboardInterrupt:
            shell.error = {"name": "KeyboardInterrupt", "value": "", "traceback": "KeyboardInterrupt"}
        except BaseException as error:  # a SystemExit from the cell: the context stays
            shell.error = {"name": type(error).__name__, "value": str(error), "traceback": ""}
        finally:
            _current["running"] = False
        out.flush()
        err.flush()
        if shell.error is not None:
            emit(dict(shell.error, type="error", id=request_id))
        emit({"type": "done", "id": request_id, "executionCount": shell.execution_count - 1})
        _current["id"] = None


sys.exit(main())
