source .gpuhost/setup.sh > /tmp/setup.log 2>&1 || { tail -30 /tmp/setup.log; exit 1; }
(cd build && AMRGRAV_REQUIRE_GPU=1 timeout 220 ctest -L gpu > /tmp/ctest.log 2>&1; grep -E "tests passed|\*\*\*" /tmp/ctest.log | cut -c1-120; grep -hE '^FAIL' Testing/Temporary/LastTest.log | head -5)
timeout 300 bash bench/gpu/device-check.sh groups 2>&1 | grep -E "^groups|rc=" | cut -c1-200
