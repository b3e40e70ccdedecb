! The Fortran module's system solve (issue #18; test/fortran.test.ts): probes on cell centres equal the cells'
! potential (direct summation, self term off), a subset of 1-based targets is bitwise the full solve there, probes
! off the cells match this program's own sum, and the module's length check.
program system_probes
  use amrgrav
  use, intrinsic :: iso_c_binding
  implicit none
  integer, parameter :: ns = 8, nc = ns * ns * ns, np = 8, nt = 20
  real(c_double) :: x(nc), y(nc), z(nc), m(nc), h(nc), pot(nc), full(nc), tpot(nt), bad(nc - 1)
  real(c_double) :: px(np), py(np), pz(np), ppot(np)
  integer :: targets(nt), i, j, k, p, st, st2, st3, bitwise
  type(amrgrav_options) :: o
  type(amrgrav_solver) :: s
  real(c_double) :: gap, err, ref, r
  p = 0
  do k = 0, ns - 1
    do j = 0, ns - 1
      do i = 0, ns - 1
        p = p + 1
        x(p) = (i + 0.5d0) / ns
        y(p) = (j + 0.5d0) / ns
        z(p) = (k + 0.5d0) / ns
        h(p) = 1d0 / ns
        m(p) = (1d0 + x(p) * y(p) + 0.3d0 * z(p)) * h(p)**3
      end do
    end do
  end do
  do i = 1, 4  ! on cell centres: cells 1, 101, 201, 301
    px(i) = x(1 + 100 * (i - 1))
    py(i) = y(1 + 100 * (i - 1))
    pz(i) = z(1 + 100 * (i - 1))
  end do
  do i = 5, np  ! off the cells, some outside the unit cube
    px(i) = -0.3d0 + 0.37d0 * i
    py(i) = 0.45d0
    pz(i) = 1.2d0 - 0.1d0 * i
  end do
  do i = 1, nt
    targets(i) = nc - 25 * (i - 1)  ! 1-based, descending
  end do
  call amrgrav_default_options(o)
  o%G = 1d0
  o%backend = AMRGRAV_BACKEND_CPU
  o%self_potential = 0
  if (amrgrav_create(o, s) /= AMRGRAV_OK) error stop 'create'
  st = amrgrav_solve_system(s, x, y, z, m, h, pot, px, py, pz, ppot, direct=.true.)
  gap = 0
  do i = 1, 4
    gap = max(gap, abs(ppot(i) - pot(1 + 100 * (i - 1))) / abs(pot(1 + 100 * (i - 1))))
  end do
  err = 0
  do i = 5, np
    ref = 0
    do j = 1, nc
      r = sqrt((px(i) - x(j))**2 + (py(i) - y(j))**2 + (pz(i) - z(j))**2)
      ref = ref - m(j) / r
    end do
    err = max(err, abs(ppot(i) - ref) / abs(ref))
  end do
  st2 = amrgrav_solve_system(s, x, y, z, m, h, tpot, targets=targets)
  if (amrgrav_compute_potential(s, x, y, z, m, h, full) /= AMRGRAV_OK) error stop 'compute'
  bitwise = 0
  do i = 1, nt
    if (transfer(tpot(i), 0_c_int64_t) == transfer(full(targets(i)), 0_c_int64_t)) bitwise = bitwise + 1
  end do
  st3 = amrgrav_solve_system(s, x, y, z, m, h, bad)
  write (*, '(a,i0,a,es12.4,a,es12.4,a,i0,a,i0,a,i0,a,i0,a)') '{"status":', st, ',"centreGap":', gap, &
    ',"probeErr":', err, ',"subsetStatus":', st2, ',"bitwise":', bitwise, ',"targets":', nt, ',"mismatch":', st3, &
    ',"mismatchMessage":"' // amrgrav_last_error(s) // '"}'
  call amrgrav_destroy(s)
end program system_probes
