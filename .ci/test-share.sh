# Sourced by .ci/sanitizers.sh and .ci/swiftshader.sh with the share's size in $share_of: the
# suite they repeat (lavapipe ran every case first) runs 1 in $share_of of each random sweep's
# cases (VKDML_TEST_SHARE=r/n, test/test_util.h: SweepRuns) and the CLI tests' long loops a
# share of their items (test/cli/cli_test.py: share), to keep CI within its time. r turns
# with the commit (its hash modulo n), so that successive commits cover every case; a share
# already in the environment is kept. The line it prints replays the same cases.
if [ -z "${VKDML_TEST_SHARE:-}" ]; then
  head=$(git rev-parse --short=7 HEAD 2>/dev/null || echo 0)
  VKDML_TEST_SHARE="$(((0x$head) % share_of))/$share_of"
fi
export VKDML_TEST_SHARE
echo "$0: the random sweeps run the share VKDML_TEST_SHARE=$VKDML_TEST_SHARE of their cases"
