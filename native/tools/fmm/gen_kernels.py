#!/usr/bin/env python3
"""Writes native/fmm/m2l_kernels.h: straight-line Cartesian M2L kernels for orders 3..7, templated on the
arithmetic type (double, or a SIMD vector of doubles: one interaction per lane). The library's FMM (native/fmm/)
uses the one-sided kernels (in lanes on the CPU, in double per thread on the GPU: native/cuda/kernel_fmm.cu); the study prototype (bench/prototypes/fmm/) uses the mutual ones.

Conventions (native/fmm/multi_index.h): multipoles M[n] = sum m d^n / n!, local coefficients L[k] = d^k phi
(derivatives), D[n] = d^n (1/|R|) at R = z_A - z_B, truncation |n| + |k| <= p:
  mutual:    L_A[k] += sum_n (-1)^|n| M_B[n] D[n+k],   L_B[k] += (-1)^|k| sum_n M_A[n] D[n+k];
  one-sided: L_A[k] += sum_n (-1)^|n| M_B[n] D[n+k]    (the source B's multipoles into the target A's expansion).
The 'nd' variants leave out the dipole terms (multipoles about the centre of mass, where they vanish).
Terms are numbered by degree, then a descending, then b descending.
The derivatives come from the Taylor-coefficient recurrence of 1/r, written from its definition:
  |n| r^2 T_n = -(2|n| - 1) sum_i R_i T_(n - e_i) - (|n| - 1) sum_i T_(n - 2 e_i),   D_n = n! T_n.
Usage (from the repository root): python3 native/tools/fmm/gen_kernels.py > native/fmm/m2l_kernels.h
and python3 native/tools/fmm/gen_kernels.py --device > native/cuda/m2l_device.h (the CUDA backend's fused M2L).
"""
from math import factorial

ORDERS = range(3, 8)


def terms(p):
    out = []
    for d in range(p + 1):
        for a in range(d, -1, -1):
            for b in range(d - a, -1, -1):
                out.append((a, b, d - a - b))
    return out


def order_setup(p):
    """The order's terms (multi-indices in fmm/multi_index.h's order), their index, count and degrees."""
    t = terms(p)
    return t, {n: i for i, n in enumerate(t)}, len(t), [sum(n) for n in t]


def recurrence(n, m, idx, ref, const):
    """The derivative recurrence's right-hand side for multi-index n of degree m (without the 1/r^2 factor):
    -(2m-1)/m sum_ax x_ax t[n - e_ax] - (m-1)/m sum_ax t[n - 2 e_ax]; ref(k) names term k, const(c) a constant."""
    R = ["x", "y", "z"]
    s1, s2 = [], []
    for ax in range(3):
        q = list(n)
        q[ax] -= 1
        if q[ax] >= 0:
            s1.append(f"{R[ax]} * {ref(idx[tuple(q)])}")
        q[ax] -= 1
        if q[ax] >= 0:
            s2.append(ref(idx[tuple(q)]))
    a = -(2.0 * m - 1) / m
    b = -(m - 1.0) / m
    expr = f"{const(a)} * ({' + '.join(s1)})"
    if s2 and m > 1:
        expr += f" + {const(b)} * ({' + '.join(s2)})"
    return expr


def recurrence_d(n, m, idx):
    """The recurrence for D_n = n! T_n itself (rinv2 folded into the degree's factors ax, ay, az, bb):
    D_n = sum_ax n_ax (a_m R_ax / r^2) D[n - e_ax] + sum_ax n_ax (n_ax - 1) (b_m / r^2) D[n - 2 e_ax]
    (n! / (n - e_ax)! = n_ax), with a_m = -(2m-1)/m, b_m = -(m-1)/m as in recurrence()."""
    R = ["ax", "ay", "az"]
    parts = []
    for a in range(3):
        q = list(n)
        q[a] -= 1
        if q[a] >= 0:
            c = n[a]
            parts.append(f"{R[a]} * d{idx[tuple(q)]}" if c == 1 else f"{R[a]} * ({float(c)!r} * d{idx[tuple(q)]})")
        q[a] -= 1
        if q[a] >= 0 and m > 1:
            c = n[a] * (n[a] - 1)
            parts.append(f"bb * d{idx[tuple(q)]}" if c == 1 else f"bb * ({float(c)!r} * d{idx[tuple(q)]})")
    return " + ".join(parts)


def emit_derivatives(p, t, idx, nt, deg):
    L = [f"template <class T> AG_FMM_INLINE void derivatives{p}(T x, T y, T z, T* __restrict D) {{",
         "  const T r2 = x * x + y * y + z * z;",
         "  const T rinv2 = bc<T>(1.0) / r2;",
         "  T t[%d];" % nt,
         "  t[0] = vsqrt(rinv2);"]
    for i in range(1, nt):
        expr = recurrence(t[i], deg[i], idx, lambda k: f"t[{k}]", lambda c: f"bc<T>({c!r})")
        L.append(f"  t[{i}] = ({expr}) * rinv2;")
    for i in range(nt):
        f = factorial(t[i][0]) * factorial(t[i][1]) * factorial(t[i][2])
        L.append(f"  D[{i}] = t[{i}]" + (f" * bc<T>({float(f)!r});" if f != 1 else ";"))
    L.append("}")
    L.append("")
    return "\n".join(L)


def sums(p, t, idx, nt, deg, dip, k):
    """The terms of L_A[k] (signed) and of L_B[k] (unsigned) as source strings."""
    pa, pb = [], []
    for q in range(nt):
        if deg[k] + deg[q] > p:
            break
        if not dip and deg[q] == 1:
            continue
        nk = idx[(t[k][0] + t[q][0], t[k][1] + t[q][1], t[k][2] + t[q][2])]
        pa.append(("-" if deg[q] % 2 else "+", f"Mb[{q}] * D[{nk}]"))
        pb.append(f"Ma[{q}] * D[{nk}]")
    ea = " ".join(f"{s} {e}" for s, e in pa).lstrip("+ ")
    if ea.startswith("- "):
        ea = "-" + ea[2:]
    return ea, " + ".join(pb)


def emit_m2l(p, t, idx, nt, deg, dip):
    suffix = "" if dip else "nd"
    L = [f"template <class T> AG_FMM_INLINE void m2l{p}{suffix}(const T* __restrict D, const T* __restrict Ma, "
         "const T* __restrict Mb, T* __restrict La, T* __restrict Lb) {"]
    for k in range(nt):
        ea, eb = sums(p, t, idx, nt, deg, dip, k)
        L.append(f"  La[{k}] += {ea};")
        L.append(f"  Lb[{k}] {'-=' if deg[k] % 2 else '+='} {eb};")
    L.append("}")
    L.append("")
    L.append(f"template <class T> AG_FMM_INLINE void m2lOne{p}{suffix}(const T* __restrict D, const T* __restrict Mb, "
             "T* __restrict La) {")
    for k in range(nt):
        ea, _ = sums(p, t, idx, nt, deg, dip, k)
        L.append(f"  La[{k}] += {ea};")
    L.append("}")
    L.append("")
    return "\n".join(L)


# The CUDA backend's fused M2L (native/cuda/m2l_device.h): the L terms of degree <= REG_DEGREE[p] are kept in
# registers, the others in the calling lane's column of shared memory (stride 32 doubles: one column per lane).
REG_DEGREE = {3: 3, 4: 4, 5: 3, 6: 3, 7: 2}


def emit_fused(p, t, idx, nt, deg, dip=False, direct=False):
    """One-sided M2L without dipole terms (dip: with them, m2lFusedDip: multipoles about geometric centres, periodic
    boxes), the derivative recurrence and the products interleaved by degree m: once the derivatives of degree m
    exist, every product D[j] (|j| = m) is added, grouped by target term k (ascending), each group's sum over q
    ascending; then the derivatives below m - 1 are dead. Live registers: two degrees of the recurrence, the register
    terms, and one degree's derivatives."""
    regs = [k for k in range(nt) if deg[k] <= REG_DEGREE[p]]
    name = ("m2lDirectDip" if dip else "m2lDirect") if direct else ("m2lFusedDip" if dip else "m2lFused")
    name += str(p)
    what = " With the dipole terms (the layout of m2lFused{p}).".format(p=p) if dip else ""
    if direct:
        what += (" Direct: the recurrence made on D itself (recurrence_d: no T, no factorials; 1/r^2 folded into"
                 " each degree's factors), so fewer values live and fewer operations; rounds otherwise than m2lFused.")
    L = [f"/// Order {p}: the first NR terms in La (registers, in term order; by default kM2LRegTerms{p} = {len(regs)}, the",
         f"/// terms of degree <= {REG_DEGREE[p]}), the others in Ls[32 s] (s: the term's index - NR). Mb[MS q]: the source's term",
         f"/// q (MS 1: where it lies; kernel_fmm.cu's staged M2L passes its shared-memory row stride).{what}",
         f"template <int MS = 1, int NR = kM2LRegTerms{p}>",
         f"AG_M2L_DEVICE void {name}(double x, double y, double z, const double* __restrict Mb, "
         "double* __restrict La, volatile double* Ls) {",
         "  const double r2 = x * x + y * y + z * z;",
         "  const double rinv2 = 1.0 / r2;",
         "  const double t0 = sqrt(rinv2);"]
    for m in range(p + 1):
        lev = [i for i in range(nt) if deg[i] == m]
        if direct:
            if m == 0:
                L.append("  const double d0 = t0;")
            else:
                a = -(2.0 * m - 1) / m
                b = -(m - 1.0) / m
                L.append("  double " + ", ".join(f"d{i}" for i in lev) + ";")
                L.append("  {")
                L.append(f"  const double ax = {a!r} * rinv2 * x, ay = {a!r} * rinv2 * y, az = {a!r} * rinv2 * z;")
                if m > 1:
                    L.append(f"  const double bb = {b!r} * rinv2;")
                for i in lev:
                    L.append(f"  d{i} = {recurrence_d(t[i], m, idx)};")
                L.append("  }")
        else:
            for i in lev:
                if i == 0:
                    continue
                expr = recurrence(t[i], m, idx, lambda k: f"t{k}", repr)
                L.append(f"  const double t{i} = ({expr}) * rinv2;")
            for i in lev:
                f = factorial(t[i][0]) * factorial(t[i][1]) * factorial(t[i][2])
                L.append(f"  const double d{i} = t{i}" + (f" * {float(f)!r};" if f != 1 else ";"))
        for k in range(nt):
            e = m - deg[k]
            if e < 0 or (e == 1 and not dip):
                continue
            terms_ = []
            for q in range(nt):
                if deg[q] != e:
                    continue
                j = idx[(t[k][0] + t[q][0], t[k][1] + t[q][1], t[k][2] + t[q][2])]
                terms_.append(("-" if e % 2 else "+", f"Mb[MS * {q}] * d{j}"))
            ex = " ".join(f"{sg} {x}" for sg, x in terms_).lstrip("+ ")
            if ex.startswith("- "):
                ex = "-(" + ex[2:].replace(" - ", " + ") + ")"
            L.append(f"  m2lAdd<NR, {k}>(La, Ls, {ex});")
    L.append("}")
    L.append("")
    return "\n".join(L)


def print_inline_macro(name, under_nvcc, otherwise):
    """The generated header's function specifier: `under_nvcc` when nvcc compiles it, else `otherwise` (unless the
    includer defined `name` first)."""
    print(f"#ifndef {name}")
    print("#if defined(__CUDACC__)")
    print(f"#define {name} {under_nvcc}")
    print("#else")
    print(f"#define {name} {otherwise}")
    print("#endif")
    print("#endif")


def main_device():
    print("/// \\file m2l_device.h")
    print("/// \\brief Generated by native/tools/fmm/gen_kernels.py --device (do not edit): the CUDA backend's one-sided")
    print("/// M2L without dipole terms (multipoles about the centres of mass: m2lFused) and with them (about geometric")
    print("/// centres, periodic boxes: m2lFusedDip), orders 3..7, in double, the derivatives")
    print("/// of 1/r (fmm/m2l_kernels.h's recurrence, the same expressions) made degree by degree and used as they come,")
    print("/// so no thread holds all of them: kernel_fmm.cu keeps the low-degree L terms in registers and the others")
    print("/// in shared memory (a column per lane). Sum order of each L term: degree of the derivative, then q.")
    print("/// m2lDirect and m2lDirectDip: the same products and sums, the derivatives by the recurrence on D = n! T")
    print("/// itself (kernel_fmm.cu's direct M2L variants, cuda/m2l_variants.h).")
    print("#pragma once")
    print("#include <cmath>")
    print("")
    print_inline_macro("AG_M2L_DEVICE", "__device__ __forceinline__", "inline")
    print("")
    print("namespace amrgrav {")
    print("namespace cuda {")
    print("")
    print("/// L term K's sum v added where it lives: La[K] for the first NR terms, else the lane's shared column.")
    print("template <int NR, int K>")
    print("AG_M2L_DEVICE void m2lAdd(double* __restrict La, volatile double* Ls, double v) {")
    print("  if constexpr (K < NR) La[K] += v;")
    print("  else Ls[32 * (K - NR)] += v;")
    print("}")
    print("")
    for p in ORDERS:
        t, idx, nt, deg = order_setup(p)
        regs = sum(1 for d in deg if d <= REG_DEGREE[p])
        print(f"constexpr int kM2LRegTerms{p} = {regs}, kM2LSharedTerms{p} = {nt - regs};")
    print("")
    for p in ORDERS:
        print(emit_fused(p, *order_setup(p)))
    for p in ORDERS:
        print(emit_fused(p, *order_setup(p), dip=True))
    for p in ORDERS:
        print(emit_fused(p, *order_setup(p), direct=True))
    for p in ORDERS:
        print(emit_fused(p, *order_setup(p), dip=True, direct=True))
    print("}  // namespace cuda")
    print("}  // namespace amrgrav")


def main():
    print("/// \\file m2l_kernels.h")
    print("/// \\brief Generated by native/tools/fmm/gen_kernels.py (do not edit): derivatives of 1/r and the mutual and")
    print("/// one-sided M2L of orders 3..7, templated on the arithmetic type T, which must provide vsqrt(T) and")
    print("/// bc<T>(double) (a broadcast) in namespace amrgrav::fmm.")
    print("#pragma once")
    print("// Host code inlines them always; nvcc (the CUDA backend's FMM, native/cuda/kernel_fmm.cu) compiles them for")
    print("// host and device.")
    print_inline_macro("AG_FMM_INLINE", "__host__ __device__ __forceinline__", "inline __attribute__((always_inline))")
    print("")
    print("namespace amrgrav {")
    print("namespace fmm {")
    print("")
    for p in ORDERS:
        t, idx, nt, deg = order_setup(p)
        print(emit_derivatives(p, t, idx, nt, deg))
        print(emit_m2l(p, t, idx, nt, deg, True))
        print(emit_m2l(p, t, idx, nt, deg, False))
    print("}  // namespace fmm")
    print("}  // namespace amrgrav")


if __name__ == "__main__":
    import sys
    main_device() if sys.argv[1:] == ["--device"] else main()
