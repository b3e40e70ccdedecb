#!/usr/bin/env python3
"""Writes native/fmm/m2l_kernels.h: straight-line Cartesian M2L kernels for orders 3..7, templated on the
arithmetic type (double, or a SIMD vector of doubles: one interaction per lane). The library's FMM (native/fmm/)
uses the harmonic one-sided kernels (emit_harmonic: folded multipoles, in lanes on the CPU) for its lists and the full
one-sided kernel with dipole terms for the far periodic images; the study prototype (bench/prototypes/fmm/) uses the
mutual ones. The CUDA backend's fused kernels (--device, native/cuda/m2l_device.h) are the same sums, one pair a
thread.

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


def recurrence_d(n, m, idx, ref=lambda k: f"d{k}", const=repr):
    """The recurrence for D_n = n! T_n itself (rinv2 folded into the degree's factors ax, ay, az, bb):
    D_n = sum_ax n_ax (a_m R_ax / r^2) D[n - e_ax] + sum_ax n_ax (n_ax - 1) (b_m / r^2) D[n - 2 e_ax]
    (n! / (n - e_ax)! = n_ax), with a_m = -(2m-1)/m, b_m = -(m-1)/m as in recurrence(); ref(k) names derivative k,
    const(c) a constant (the device's d{k} and plain doubles by default)."""
    R = ["ax", "ay", "az"]
    parts = []
    for a in range(3):
        q = list(n)
        q[a] -= 1
        if q[a] >= 0:
            c = n[a]
            d = ref(idx[tuple(q)])
            parts.append(f"{R[a]} * {d}" if c == 1 else f"{R[a]} * ({const(float(c))} * {d})")
        q[a] -= 1
        if q[a] >= 0 and m > 1:
            c = n[a] * (n[a] - 1)
            d = ref(idx[tuple(q)])
            parts.append(f"bb * {d}" if c == 1 else f"bb * ({const(float(c))} * {d})")
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


def degree_opening(m, lev):
    """The direct recurrence's lines before degree m's derivatives d{i} (i in lev): their declaration, a scope, and
    the degree's factors ax, ay, az (a_m R / r^2) and bb (b_m / r^2, degree > 1) as recurrence_d names them."""
    a = -(2.0 * m - 1) / m
    b = -(m - 1.0) / m
    L = ["  double " + ", ".join(f"d{i}" for i in lev) + ";", "  {",
         f"  const double ax = {a!r} * rinv2 * x, ay = {a!r} * rinv2 * y, az = {a!r} * rinv2 * z;"]
    if m > 1:
        L.append(f"  const double bb = {b!r} * rinv2;")
    return L


def degree_products(m, layout, t, idx, deg, dip):
    """The fused kernels' products of derivative degree m, as m2lAdd lines: for each L term k of the layout (its
    position kk there: the full term list, or the harmonic one) the source terms q of the same layout with |q| = m - |k|
    (q ascending; no dipole terms unless dip), Mb[MS * qq] * d[k + q], signed (-1)^|q|."""
    L = []
    for kk, k in enumerate(layout):
        e = m - deg[k]
        if e < 0 or (e == 1 and not dip):
            continue
        terms_ = []
        for qq, q in enumerate(layout):
            if deg[q] != e:
                continue
            j = idx[(t[k][0] + t[q][0], t[k][1] + t[q][1], t[k][2] + t[q][2])]
            terms_.append(("-" if e % 2 else "+", f"Mb[MS * {qq}] * d{j}"))
        ex = " ".join(f"{sg} {x}" for sg, x in terms_).lstrip("+ ")
        if ex.startswith("- "):
            ex = "-(" + ex[2:].replace(" - ", " + ") + ")"
        L.append(f"  m2lAdd<NR, {kk}>(La, Ls, {ex});")
    return L


# The CUDA backend's fused M2L (native/cuda/m2l_device.h): the L terms of degree <= REG_DEGREE[p] are kept in
# registers, the others in the calling lane's column of shared memory (stride 32 doubles: one column per lane).
REG_DEGREE = {3: 3, 4: 4, 5: 3, 6: 3, 7: 2}
# The harmonic kernels' register terms (degree <= this; the others in shared memory).
HARMONIC_REG_DEGREE = {3: 3, 4: 4, 5: 3, 6: 3, 7: 4}


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
                L += degree_opening(m, lev)
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
        L += degree_products(m, list(range(nt)), t, idx, deg, dip)
    L.append("}")
    L.append("")
    return "\n".join(L)


# The harmonic form (both backends): D = d^n (1/r) and L = d^k phi are harmonic in their index (the trace identity
# X[n + 2 e_z] = -X[n + 2 e_x] - X[n + 2 e_y]), so every term with c >= 2 is the others' sum: a multipole's terms
# fold onto the (p+1)^2 with c <= 1 (same degree and sign), the M2L runs over those alone (folded M, L with k_z <= 1,
# derivatives with c <= 2) and the target's L is unfolded once after all its sources: about half the products and
# about half the derivatives' work of the full kernel, the same expansion.
def harmonic_terms(t):
    """The terms with c <= 1, in term order: the harmonic (folded) layout's index -> full index."""
    return [i for i, n in enumerate(t) if n[2] <= 1]


def trace_partners(n, idx):
    """A term n = (a, b, 2)'s partners in the trace identity, X[n] = -(X[(a + 2, b, 0)] + X[(a, b + 2, 0)])."""
    a, b, _ = n
    return idx[(a + 2, b, 0)], idx[(a, b + 2, 0)]


def harmonic_derivative_lines(lev, t, m, idx, ref, const, indent):
    """The lines that make the derivatives of degree m in `lev` with c <= 2: c <= 1 by recurrence_d, c = 2 by the trace
    identity (after them: its partners have c = 0). ref(k) names derivative k, const(c) a constant."""
    L = [f"{indent}{ref(i)} = {recurrence_d(t[i], m, idx, ref, const)};" for i in lev if t[i][2] <= 1]
    for i in lev:
        if t[i][2] == 2:
            x, y = trace_partners(t[i], idx)
            L.append(f"{indent}{ref(i)} = -({ref(x)} + {ref(y)});")
    return L


def binom(j, i):
    return factorial(j) // (factorial(i) * factorial(j - i))


def fold_sources(idx, n):
    """The full terms (coefficient, index) whose sum is harmonic term n = (a, b, c <= 1) after folding: from
    (a - 2i, b - 2(j - i), c + 2j) with (-1)^j C(j, i) (the trace identity applied j times)."""
    a, b, c = n
    out = []
    for j in range(a // 2 + b // 2 + 1):
        for i in range(j + 1):
            q = (a - 2 * i, b - 2 * (j - i), c + 2 * j)
            if q[0] >= 0 and q[1] >= 0:
                out.append(((-1) ** j * binom(j, i), idx[q]))
    return out


def unfold_sources(hidx, n):
    """Full term n = (a, b, c) as harmonic terms: (-1)^j C(j, i) L_h[(a + 2i, b + 2(j - i), c mod 2)], j = c // 2."""
    a, b, c = n
    j, c0 = c // 2, c % 2
    return [((-1) ** j * binom(j, i), hidx[(a + 2 * i, b + 2 * (j - i), c0)]) for i in range(j + 1)]


def coef(c, v, bc):
    """The signed term c v; a constant other than 1 broadcast (bc<T>) when bc, else a plain double."""
    if c == 1:
        return f"+ {v}"
    if c == -1:
        return f"- {v}"
    k = f"bc<T>({float(abs(c))!r})" if bc else repr(float(abs(c)))
    return f"{'+' if c > 0 else '-'} {k} * {v}"


def signed_sum(parts):
    e = " ".join(parts).lstrip("+ ")
    return "-" + e[2:] if e.startswith("- ") else e


def emit_harmonic(p, t, idx, nt, deg):
    h = harmonic_terms(t)
    nh = len(h)
    L = [f"constexpr int kHarmonicTerms{p} = {nh};", "",
         f"/// Order {p}: D[j] = d^j (1/r) at (x, y, z) for the terms with c <= 2 (full layout; the others are left as",
         "/// they were): c <= 1 by the recurrence on D itself, c = 2 by the trace identity.",
         f"template <class T> AG_FMM_INLINE void derivativesH{p}(T x, T y, T z, T* __restrict D) {{",
         "  const T r2 = x * x + y * y + z * z;",
         "  const T rinv2 = bc<T>(1.0) / r2;",
         "  D[0] = vsqrt(rinv2);"]
    for m in range(1, p + 1):
        lev = [i for i in range(nt) if deg[i] == m]
        a = -(2.0 * m - 1) / m
        b = -(m - 1.0) / m
        L.append("  {")
        L.append(f"    const T ax = bc<T>({a!r}) * rinv2 * x, ay = bc<T>({a!r}) * rinv2 * y, "
                 f"az = bc<T>({a!r}) * rinv2 * z;")
        if m > 1:
            L.append(f"    const T bb = bc<T>({b!r}) * rinv2;")
        L += harmonic_derivative_lines(lev, t, m, idx, lambda k: f"D[{k}]", lambda c: f"bc<T>({c!r})", "    ")
        L.append("  }")
    L.append("}")
    L.append("")
    L += emit_fold_unfold(p, t, idx, nt, "template <class T> AG_FMM_INLINE void", "T", bc=True)
    for dip in (True, False):
        suffix = "" if dip else "nd"
        L.append(f"/// Order {p}, one-sided, harmonic: Lh (k_z <= 1) += the source's folded multipoles Mh through D")
        L.append(f"/// (derivativesH{p})" + ("." if dip else ", without the dipole terms."))
        L.append(f"template <class T> AG_FMM_INLINE void m2lOneH{p}{suffix}(const T* __restrict D, "
                 "const T* __restrict Mh, T* __restrict Lh) {")
        for kk, k in enumerate(h):
            parts = []
            for qq, q in enumerate(h):
                if deg[k] + deg[q] > p:
                    continue
                if not dip and deg[q] == 1:
                    continue
                j = idx[(t[k][0] + t[q][0], t[k][1] + t[q][1], t[k][2] + t[q][2])]
                parts.append(("- " if deg[q] % 2 else "+ ") + f"Mh[{qq}] * D[{j}]")
            L.append(f"  Lh[{kk}] += {signed_sum(parts)};")
        L.append("}")
        L.append("")
    return "\n".join(L)


def emit_fold_unfold(p, t, idx, nt, spec, ty, bc):
    """foldMultipoles{p} and addUnfoldedLocal{p} as lines: `spec` the specifier and return type, `ty` the arithmetic
    type, bc whether constants are broadcast (bc<T>)."""
    h = harmonic_terms(t)
    hidx = {t[i]: k for k, i in enumerate(h)}
    nh = len(h)
    L = [f"/// Order {p}: a multipole's {nt} terms folded onto its {nh} harmonic ones (c <= 1).",
         f"{spec} foldMultipoles{p}(const {ty}* __restrict M, {ty}* __restrict Mh) {{"]
    for k, i in enumerate(h):
        L.append(f"  Mh[{k}] = {signed_sum([coef(c, f'M[{j}]', bc) for c, j in fold_sources(idx, t[i])])};")
    L += ["}", "",
          f"/// Order {p}: L += the local expansion whose harmonic terms (c <= 1) are Lh, every term (c >= 2 by the",
          "/// trace identity).",
          f"{spec} addUnfoldedLocal{p}(const {ty}* __restrict Lh, {ty}* __restrict L) {{"]
    for i in range(nt):
        L.append(f"  L[{i}] += {signed_sum([coef(c, f'Lh[{j}]', bc) for c, j in unfold_sources(hidx, t[i])])};")
    L += ["}", ""]
    return L


def emit_fused_harmonic(p, t, idx, nt, deg, dip):
    """The device's harmonic M2L (one pair, in double): the derivatives with c <= 1 by the recurrence on D itself
    and c = 2 by the trace identity, degree by degree, each degree's products added as it comes (as emit_fused's
    direct kernels); the source's folded multipoles Mb[MS qq] (the harmonic layout) into the target's harmonic terms,
    the first NR in La (registers), the others in Ls[32 s]."""
    h = harmonic_terms(t)
    name = ("m2lHarmonicDip" if dip else "m2lHarmonic") + str(p)
    with_dip = ", with the dipole terms" if dip else ""
    L = [f"/// Order {p}, harmonic{with_dip}: the first NR of the {len(h)} harmonic L terms in La, the others",
         "/// in Ls[32 s] (s: the term's index - NR); Mb[MS qq]: the source's folded term qq.",
         f"template <int MS = 1, int NR = kM2LHarmonicRegTerms{p}>",
         f"AG_M2L_DEVICE void {name}(double x, double y, double z, const double* __restrict Mb, "
         "double* __restrict La, volatile double* Ls) {",
         "  const double r2 = x * x + y * y + z * z;",
         "  const double rinv2 = 1.0 / r2;",
         "  const double d0 = sqrt(rinv2);"]
    used = set()  # the derivatives the products read (the recurrence reads c <= 1 alone)
    for k in h:
        for q in h:
            if deg[k] + deg[q] <= p and (dip or deg[q] != 1):
                used.add(idx[(t[k][0] + t[q][0], t[k][1] + t[q][1], t[k][2] + t[q][2])])
    for m in range(p + 1):
        lev = [i for i in range(nt) if deg[i] == m and (t[i][2] <= 1 or (t[i][2] == 2 and i in used))]
        if m > 0:
            L += degree_opening(m, lev)
            L += harmonic_derivative_lines(lev, t, m, idx, lambda k: f"d{k}", repr, "  ")
            L.append("  }")
        L += degree_products(m, h, t, idx, deg, dip)
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
    print("/// itself (kernel_fmm.cu's direct M2L variants, cuda/m2l_variants.h). m2lHarmonic and m2lHarmonicDip (the")
    print("/// default variant) with foldMultipoles and addUnfoldedLocal: the harmonic form of fmm/m2l_kernels.h, the")
    print("/// products over the folded multipoles' (p+1)^2 terms.")
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
    for p in ORDERS:
        t, idx, nt, deg = order_setup(p)
        regs = sum(1 for i in harmonic_terms(t) if deg[i] <= HARMONIC_REG_DEGREE[p])
        print(f"constexpr int kM2LHarmonicRegTerms{p} = {regs};")
        print("\n".join(emit_fold_unfold(p, t, idx, nt, "AG_M2L_DEVICE void", "double", bc=False)))
        print(emit_fused_harmonic(p, t, idx, nt, deg, False))
        print(emit_fused_harmonic(p, t, idx, nt, deg, True))
    print("}  // namespace cuda")
    print("}  // namespace amrgrav")


def main():
    print("/// \\file m2l_kernels.h")
    print("/// \\brief Generated by native/tools/fmm/gen_kernels.py (do not edit): derivatives of 1/r and the mutual and")
    print("/// one-sided M2L of orders 3..7, and their harmonic form (derivativesH, foldMultipoles, m2lOneH,")
    print("/// addUnfoldedLocal: the M2L over the (p+1)^2 folded terms), templated on the arithmetic type T, which must")
    print("/// provide vsqrt(T) and bc<T>(double) (a broadcast) in namespace amrgrav::fmm.")
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
        print(emit_harmonic(p, t, idx, nt, deg))
    print("}  // namespace fmm")
    print("}  // namespace amrgrav")


if __name__ == "__main__":
    import sys
    main_device() if sys.argv[1:] == ["--device"] else main()
