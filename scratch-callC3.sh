source .gpuhost/setup.sh > /tmp/setup.log 2>&1 || { tail -30 /tmp/setup.log; exit 1; }
nvidia-smi --query-gpu=name --format=csv,noheader
(cd build && AMRGRAV_REQUIRE_GPU=1 timeout 200 ctest -L gpu > /tmp/ctest.log 2>&1; grep -E "tests passed|\*\*\*" /tmp/ctest.log | cut -c1-120; grep -hE '^FAIL' Testing/Temporary/LastTest.log | head -5; grep -hE 'regrow' Testing/Temporary/LastTest.log | head -4 | cut -c1-200)
(cd build && timeout 120 ./amrgrav_gpu_timing --no-perf --plummer-particles 16000000 --thetas 0.405,0.41 --kernels spline --reps 3 --check-points 4096 | grep '"plummer-particles"' | cut -c1-420)
timeout 200 bash bench/gpu/blocks-check.sh big 2>&1 | grep -E "time |rc=|error" | cut -c1-330
