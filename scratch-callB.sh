source .gpuhost/setup.sh > /tmp/setup.log 2>&1 || { tail -30 /tmp/setup.log; exit 1; }
nvidia-smi --query-gpu=name --format=csv,noheader
cd build
timeout 150 ./amrgrav_gpu_timing --no-perf --plummer-particles 1000000 --thetas 0.41,0.415 --kernels spline --reps 3 --check-points 4096 | grep '"plummer-particles"' | cut -c1-520
for g in 0 32; do timeout 100 ./amrgrav_gpu_timing --no-perf --plummer 1000000 --thetas 0.4 --group-size $g --reps 3 --check-points 1024 | grep '"plummer"' | grep '"box"' | cut -c1-420; done
cd ..
timeout 420 bash bench/gpu/device-check.sh mpi 2>&1 | grep -vE "^\s*$" | tail -45
