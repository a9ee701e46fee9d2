"""The validation layer over every process a CLI test starts (ctest sets VKDML_VALIDATION_DIR).

The layer writes its messages to the log its settings file names, truncating it when a process
starts; so each process gets a settings file and a log of its own, through the environment it
inherits (VK_LAYER_SETTINGS_PATH, set just before each subprocess.Popen). `finish` then fails the
test on any message in any log. Without VKDML_VALIDATION_DIR nothing changes.
"""
import itertools
import os
import subprocess

SETTINGS = """khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG
khronos_validation.log_filename = {log}
khronos_validation.report_flags = error,warn,perf
khronos_validation.enables = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT
"""

_dir = None


def install():
    """Gives every later subprocess its own settings file and log (VKDML_VALIDATION_DIR)."""
    global _dir
    _dir = os.environ.get("VKDML_VALIDATION_DIR")
    if not _dir:
        return
    os.makedirs(_dir, exist_ok=True)
    for name in os.listdir(_dir):
        os.remove(os.path.join(_dir, name))
    os.environ["VK_INSTANCE_LAYERS"] = "VK_LAYER_KHRONOS_validation"
    os.environ.pop("VK_LOADER_LAYERS_ENABLE", None)
    counter = itertools.count()
    popen_init = subprocess.Popen.__init__

    def init(self, *args, **kwargs):
        n = next(counter)
        settings = os.path.join(_dir, f"{n}.txt")
        with open(settings, "w") as f:
            f.write(SETTINGS.format(log=os.path.join(_dir, f"{n}.log")))
        os.environ["VK_LAYER_SETTINGS_PATH"] = settings
        popen_init(self, *args, **kwargs)

    subprocess.Popen.__init__ = init


def messages():
    """Every message the layer logged so far, one string per process that logged any."""
    if not _dir:
        return []
    found = []
    for name in sorted(os.listdir(_dir)):
        if name.endswith(".log"):
            with open(os.path.join(_dir, name), errors="replace") as f:
                text = f.read()
            if text.strip():
                found.append(f"{name}: {text.strip()}")
    return found


def finish(status):
    """status, or 1 if the layer logged a message (printed), for sys.exit."""
    found = messages()
    for m in found:
        print("FAIL: validation message:", m)
    if _dir:
        logs = sum(name.endswith(".txt") for name in os.listdir(_dir))
        print(f"validation layer: {logs} process(es), {len(found)} with messages")
    return 1 if found else status


if __name__ == "__main__":
    # validation.py [--expect-messages] CMD ARG...: runs CMD under the layer; exit status CMD's,
    # or 1 on any message. --expect-messages (the canary): 0 only if the layer logged one.
    import sys

    args = sys.argv[1:]
    expect = args[:1] == ["--expect-messages"]
    if expect:
        args = args[1:]
    install()
    if not _dir:
        print("validation.py: VKDML_VALIDATION_DIR is not set", file=sys.stderr)
        sys.exit(2)
    status = subprocess.run(args).returncode
    if expect:
        found = messages()
        print(f"canary: {len(found)} process(es) with validation messages (expected 1)")
        sys.exit(0 if len(found) == 1 and "VUID-VkBufferCreateInfo-size-00912" in found[0] else 1)
    sys.exit(finish(status))
