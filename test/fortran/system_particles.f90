! Particles through the Fortran module's system solve (issue #18; test/fortran.test.ts): Plummer-softened particles
! (options%softening = 1, one softening length per particle) with cells, direct summation against this program's own
! softened sum at the particles, the tree against direct summation, one softening for all (softening=) bitwise equal to
! that value per particle, and the module's checks of the particles' arguments.
program system_particles
  use amrgrav
  use, intrinsic :: iso_c_binding
  implicit none
  integer, parameter :: ns = 6, nc = ns * ns * ns, np = 50
  real(c_double) :: x(nc), y(nc), z(nc), m(nc), h(nc), pot(nc), cax(nc), cay(nc), caz(nc)
  real(c_double) :: qx(np), qy(np), qz(np), qm(np), qe(np), qpot(np), qdir(np), q1(np), q2(np), qe1(np)
  real(c_double) :: qax(np), qay(np), qaz(np), bad(np - 1)
  integer :: i, j, k, p, st, st2, st3, st4, st5, same
  type(amrgrav_options) :: o
  type(amrgrav_solver) :: s
  real(c_double) :: err, treeErr, ref, e
  p = 0
  do k = 0, ns - 1
    do j = 0, ns - 1
      do i = 0, ns - 1
        p = p + 1
        x(p) = (i + 0.5d0) / ns
        y(p) = (j + 0.5d0) / ns
        z(p) = (k + 0.5d0) / ns
        h(p) = 1d0 / ns
        m(p) = (1d0 + x(p)) * h(p)**3
      end do
    end do
  end do
  do i = 1, np
    qx(i) = 0.3d0 + 0.4d0 * modulo(0.618034d0 * i, 1d0)
    qy(i) = 0.3d0 + 0.4d0 * modulo(0.414214d0 * i, 1d0)
    qz(i) = 0.3d0 + 0.4d0 * modulo(0.732051d0 * i, 1d0)
    qm(i) = (1d0 + 0.01d0 * i) / np
    qe(i) = 0.01d0 + 0.0004d0 * i
  end do
  call amrgrav_default_options(o)
  o%G = 1d0
  o%backend = AMRGRAV_BACKEND_CPU
  o%self_potential = 0
  o%accelerations = 1
  o%softening = 1  ! Plummer
  if (amrgrav_create(o, s) /= AMRGRAV_OK) error stop 'create'
  st = amrgrav_solve_system(s, x, y, z, m, h, pot, ax=cax, ay=cay, az=caz, &
                            direct=.true., particle_x=qx, particle_y=qy, particle_z=qz, &
                            particle_mass=qm, particle_softening=qe, particle_potential=qdir, particle_ax=qax, &
                            particle_ay=qay, particle_az=qaz)
  err = 0
  do i = 1, np
    ref = 0
    do j = 1, nc  ! cells: softened by the particle's eps
      ref = ref - m(j) / sqrt((qx(i) - x(j))**2 + (qy(i) - y(j))**2 + (qz(i) - z(j))**2 + qe(i)**2)
    end do
    do j = 1, np
      if (j == i) cycle
      e = max(qe(i), qe(j))
      ref = ref - qm(j) / sqrt((qx(i) - qx(j))**2 + (qy(i) - qy(j))**2 + (qz(i) - qz(j))**2 + e**2)
    end do
    err = max(err, abs(qdir(i) - ref) / abs(ref))
  end do
  st2 = amrgrav_solve_system(s, x, y, z, m, h, pot, ax=cax, ay=cay, az=caz, &
                            particle_x=qx, particle_y=qy, particle_z=qz, &
                             particle_mass=qm, particle_softening=qe, particle_potential=qpot, particle_ax=qax, &
                             particle_ay=qay, particle_az=qaz)
  treeErr = maxval(abs(qpot - qdir) / abs(qdir))
  ! one softening for all equals that value per particle, bitwise
  qe1 = 0.02d0
  st3 = amrgrav_solve_system(s, x, y, z, m, h, pot, ax=cax, ay=cay, az=caz, &
                            particle_x=qx, particle_y=qy, particle_z=qz, particle_mass=qm, &
                             softening=0.02d0, particle_potential=q1, particle_ax=qax, particle_ay=qay, particle_az=qaz)
  st4 = amrgrav_solve_system(s, x, y, z, m, h, pot, ax=cax, ay=cay, az=caz, &
                            particle_x=qx, particle_y=qy, particle_z=qz, particle_mass=qm, &
                             particle_softening=qe1, particle_potential=q2, particle_ax=qax, particle_ay=qay, &
                             particle_az=qaz)
  same = 0
  do i = 1, np
    if (transfer(q1(i), 0_c_int64_t) == transfer(q2(i), 0_c_int64_t)) same = same + 1
  end do
  ! the module's check: particle_mass one element short
  st5 = amrgrav_solve_system(s, x, y, z, m, h, pot, ax=cax, ay=cay, az=caz, &
                            particle_x=qx, particle_y=qy, particle_z=qz, particle_mass=bad, &
                             softening=0.02d0, particle_potential=q1)
  write (*, '(a,i0,a,es12.4,a,i0,a,es12.4,a,i0,a,i0,a,i0,a,i0,a,i0,a)') '{"status":', st, ',"directErr":', err, &
    ',"treeStatus":', st2, ',"treeErr":', treeErr, ',"oneStatus":', st3, ',"eachStatus":', st4, ',"same":', same, &
    ',"particles":', np, ',"mismatch":', st5, ',"mismatchMessage":"' // amrgrav_last_error(s) // '"}'
  call amrgrav_destroy(s)
end program system_particles
