! amrgrav.f90: the Fortran 2008 module `amrgrav` over the C API (amrgrav.h, beside this file), for Fortran hydro
! codes (FLASH, ...). The same names as the C API; the derived types amrgrav_options, amrgrav_stats and
! amrgrav_build_info are bind(C) mirrors of the C structs, and the procedures take Fortran arrays (their lengths
! are checked here, which C cannot do). Compile this file with your own compiler (.mod files are compiler-specific)
! and link libamrgrav:
!
!   gfortran -c path/to/amrgrav/native/include/amrgrav.f90
!   gfortran my_code.f90 amrgrav.o -Lpath/to/amrgrav/build/Release -lamrgrav -Wl,-rpath,path/to/amrgrav/build/Release
!
! Use, once per run and every step (conventions: docs/coupling.md):
!
!   use amrgrav
!   type(amrgrav_options) :: o
!   type(amrgrav_solver)  :: s
!   call amrgrav_default_options(o);  o%theta = 0.5d0
!   if (amrgrav_create(o, s) /= AMRGRAV_OK) error stop amrgrav_last_error()
!   every step: st = amrgrav_compute_potential(s, x, y, z, mass, size, gpot [, ax, ay, az])
!   call amrgrav_destroy(s)
!
! Units are the caller's (cgs by default, G = 6.674e-8); the potential is negative and solves lap(phi) = 4 pi G rho.
! x, y, z: cell centres; mass = density x cell volume; size: the cell's side (cells are cubes: see
! amrgrav_cube_side); interior cells only, never guard cells. Results land in the caller's order.
module amrgrav
  use, intrinsic :: iso_c_binding
  implicit none
  private

  ! ---- status codes and backends (amrgrav.h)
  integer(c_int), parameter, public :: AMRGRAV_OK = 0
  integer(c_int), parameter, public :: AMRGRAV_INVALID_INPUT = 1
  integer(c_int), parameter, public :: AMRGRAV_INVALID_OPTION = 2
  integer(c_int), parameter, public :: AMRGRAV_OUT_OF_MEMORY = 3
  integer(c_int), parameter, public :: AMRGRAV_NO_DEVICE = 4
  integer(c_int), parameter, public :: AMRGRAV_INTERNAL = 5
  integer(c_int), parameter, public :: AMRGRAV_BACKEND_AUTO = 0
  integer(c_int), parameter, public :: AMRGRAV_BACKEND_CPU = 1
  integer(c_int), parameter, public :: AMRGRAV_BACKEND_CUDA = 2

  ! ---- the C structs, field for field (amrgrav.h documents each field and its default)
  type, bind(C), public :: amrgrav_options
    integer(c_size_t) :: struct_size
    real(c_double) :: theta
    integer(c_int) :: order
    integer(c_int) :: mac
    real(c_double) :: G
    integer(c_int) :: backend
    integer(c_int) :: accelerations
    integer(c_int) :: self_potential   ! 0 none, 1 cube (c = 2.3800774), 2 lattice (c = 2.8372975, the default)
    integer(c_int) :: leaf_size
    integer(c_int) :: group_size       ! 0: automatic (cells 64; points 32)
    integer(c_int) :: threads          ! 0: $OMP_NUM_THREADS when set, else all hardware threads
    integer(c_int) :: has_box
    real(c_double) :: box_lo(3)
    real(c_double) :: box_hi(3)
    integer(c_int) :: periodic(3)
    integer(c_int) :: ewald_resolution
    integer(c_int) :: distributed
    integer(c_int) :: density_contrast
    integer(c_int) :: ewald_expansion
    integer(c_int) :: walk
    integer(c_int) :: method           ! 0 tree, 1 fmm (CPU: any box, MPI ranks too; GPU: any box, one rank)
    integer(c_int) :: fmm_order
    real(c_double) :: fmm_theta
    real(c_double) :: fmm_tolerance
    integer(c_int) :: softening        ! particles' kernel: 0 spline (radius 2.8 eps, the default), 1 Plummer
    real(c_double) :: fmm_accel_tolerance  ! FMM: the accelerations' error tolerance (5e-5; 0: the potential's rules)
  end type amrgrav_options

  type, bind(C), public :: amrgrav_stats
    real(c_double) :: seconds_total, seconds_upload, seconds_keys, seconds_build, seconds_moments, seconds_walk, &
                      seconds_download
    real(c_double) :: interactions_per_cell
    real(c_double) :: device_bytes_per_cell
    integer(c_int) :: backend
  end type amrgrav_stats

  type, bind(C), public :: amrgrav_build_info
    integer(c_size_t) :: struct_size
    integer(c_int) :: cuda_built, cuda_devices, cuda_usable, mpi_built, default_threads
  end type amrgrav_build_info

  ! ---- the block entry (amrgrav.h, "The block entry"): leaf blocks in, the potential back in the density's layout
  integer(c_int), parameter, public :: AMRGRAV_FLOAT64 = 0
  integer(c_int), parameter, public :: AMRGRAV_FLOAT32 = 1

  !> The C struct amrgrav_blocks, field for field. Fill it with amrgrav_default_blocks, then the geometry and
  !> c_loc's of the caller's arrays (which need the target attribute): for FLASH's unk(NUNK_VARS, NX, NY, NZ, MAXB),
  !> density = c_loc(unk(DENS_VAR, 1, 1, 1, 1)), var_stride = NUNK_VARS, guard = NGUARD, block_index = the leaf
  !> blocks' numbers minus 1 (0-based), lo and dx 3 per leaf block (interior lower corner, cell widths).
  type, bind(C), public :: amrgrav_blocks
    integer(c_size_t) :: struct_size
    integer(c_size_t) :: n_blocks
    integer(c_int) :: nxb, nyb, nzb
    integer(c_int) :: guard(3)
    type(c_ptr) :: lo            ! real(c_double) lo(3, n_blocks)
    type(c_ptr) :: dx            ! real(c_double) dx(3, n_blocks)
    type(c_ptr) :: block_index   ! integer(c_int) block_index(n_blocks), 0-based slots; c_null_ptr: slot b
    type(c_ptr) :: density       ! the density's first element (guard cells included)
    integer(c_int) :: dtype      ! AMRGRAV_FLOAT64 or AMRGRAV_FLOAT32 (density and results)
    integer(c_size_t) :: var_stride
    integer(c_size_t) :: block_stride
    integer(c_int) :: mesh_changed
  end type amrgrav_blocks

  !> The C structs amrgrav_system and amrgrav_system_results (amrgrav_solve_system below fills them).
  type, bind(C) :: c_system
    integer(c_size_t) :: struct_size
    integer(c_size_t) :: n_cells
    type(c_ptr) :: x, y, z, mass, size
    integer(c_size_t) :: n_probes
    type(c_ptr) :: probe_x, probe_y, probe_z
    type(c_ptr) :: targets
    integer(c_size_t) :: n_targets
    integer(c_int) :: direct
    integer(c_size_t) :: n_particles
    type(c_ptr) :: particle_x, particle_y, particle_z, particle_mass, particle_softening
    real(c_double) :: softening
  end type c_system
  type, bind(C) :: c_system_results
    integer(c_size_t) :: struct_size
    type(c_ptr) :: potential, ax, ay, az
    type(c_ptr) :: probe_potential, probe_ax, probe_ay, probe_az
    type(c_ptr) :: particle_potential, particle_ax, particle_ay, particle_az
  end type c_system_results

  !> A solver (the C API's amrgrav_solver*). Null until amrgrav_create succeeds; amrgrav_destroy nulls it again.
  type, public :: amrgrav_solver
    type(c_ptr) :: ptr = c_null_ptr
  end type amrgrav_solver

  public :: amrgrav_default_options, amrgrav_create, amrgrav_compute_potential, amrgrav_last_error, &
            amrgrav_last_warning, amrgrav_get_stats, amrgrav_features, amrgrav_destroy, amrgrav_version, &
            amrgrav_get_build_info, amrgrav_set_communicator, amrgrav_cube_side, amrgrav_default_blocks, &
            amrgrav_compute_blocks, amrgrav_tree_reused, amrgrav_solve_system

  !> The message of the last failure found by this module itself (array lengths, non-cubic cells), which
  !> amrgrav_last_error returns before the library's; cleared by every call that goes on to the library.
  character(len=:), allocatable, save :: module_error

  interface
    subroutine amrgrav_default_options(options) bind(C, name='amrgrav_default_options')
      import :: amrgrav_options
      type(amrgrav_options), intent(out) :: options
    end subroutine amrgrav_default_options

    function amrgrav_features() bind(C, name='amrgrav_features') result(f)
      import :: c_int
      integer(c_int) :: f
    end function amrgrav_features

    function c_create(options, solver) bind(C, name='amrgrav_create') result(st)
      import :: amrgrav_options, c_ptr, c_int
      type(amrgrav_options), intent(in) :: options
      type(c_ptr), intent(out) :: solver
      integer(c_int) :: st
    end function c_create

    function c_compute(solver, n, x, y, z, mass, size, pot, ax, ay, az) bind(C, name='amrgrav_compute_potential') &
        result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: solver
      integer(c_size_t), value :: n
      type(c_ptr), value :: x, y, z, mass, size, pot, ax, ay, az
      integer(c_int) :: st
    end function c_compute

    function c_last_error(solver) bind(C, name='amrgrav_last_error') result(msg)
      import :: c_ptr
      type(c_ptr), value :: solver
      type(c_ptr) :: msg
    end function c_last_error

    function c_last_warning(solver) bind(C, name='amrgrav_last_warning') result(msg)
      import :: c_ptr
      type(c_ptr), value :: solver
      type(c_ptr) :: msg
    end function c_last_warning

    function c_get_stats(solver, stats) bind(C, name='amrgrav_get_stats') result(st)
      import :: c_ptr, c_int, amrgrav_stats
      type(c_ptr), value :: solver
      type(amrgrav_stats), intent(out) :: stats
      integer(c_int) :: st
    end function c_get_stats

    subroutine c_destroy(solver) bind(C, name='amrgrav_destroy')
      import :: c_ptr
      type(c_ptr), value :: solver
    end subroutine c_destroy

    function c_version() bind(C, name='amrgrav_version') result(v)
      import :: c_ptr
      type(c_ptr) :: v
    end function c_version

    function c_get_build_info(info) bind(C, name='amrgrav_get_build_info') result(st)
      import :: amrgrav_build_info, c_int
      type(amrgrav_build_info), intent(inout) :: info
      integer(c_int) :: st
    end function c_get_build_info

    function c_set_communicator(solver, comm) bind(C, name='amrgrav_set_communicator') result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: solver
      integer(c_int), value :: comm
      integer(c_int) :: st
    end function c_set_communicator

    subroutine amrgrav_default_blocks(blocks) bind(C, name='amrgrav_default_blocks')
      import :: amrgrav_blocks
      type(amrgrav_blocks), intent(out) :: blocks
    end subroutine amrgrav_default_blocks

    function c_compute_blocks(solver, blocks, pot, ax, ay, az) bind(C, name='amrgrav_compute_blocks') result(st)
      import :: c_ptr, c_int, amrgrav_blocks
      type(c_ptr), value :: solver
      type(amrgrav_blocks), intent(in) :: blocks
      type(c_ptr), value :: pot, ax, ay, az
      integer(c_int) :: st
    end function c_compute_blocks

    subroutine c_default_system(system) bind(C, name='amrgrav_default_system')
      import :: c_system
      type(c_system), intent(out) :: system
    end subroutine c_default_system

    subroutine c_default_system_results(results) bind(C, name='amrgrav_default_system_results')
      import :: c_system_results
      type(c_system_results), intent(out) :: results
    end subroutine c_default_system_results

    function c_solve_system(solver, system, results) bind(C, name='amrgrav_solve_system') result(st)
      import :: c_ptr, c_int, c_system, c_system_results
      type(c_ptr), value :: solver
      type(c_system), intent(in) :: system
      type(c_system_results), intent(in) :: results
      integer(c_int) :: st
    end function c_solve_system

    function c_tree_reused(solver) bind(C, name='amrgrav_tree_reused') result(r)
      import :: c_ptr, c_int
      type(c_ptr), value :: solver
      integer(c_int) :: r
    end function c_tree_reused

    function c_strlen(s) bind(C, name='strlen') result(n)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: n
    end function c_strlen
  end interface

contains

  !> A C string (NUL-terminated, owned by the library) as a Fortran string.
  function from_c_string(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    if (.not. c_associated(p)) then
      s = ''
      return
    end if
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate (character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function from_c_string

  !> A solver with these options (all checked here, the periodic box's shape included). On failure the solver stays
  !> null and amrgrav_last_error() (no argument) says why.
  function amrgrav_create(options, solver) result(st)
    type(amrgrav_options), intent(in) :: options
    type(amrgrav_solver), intent(out) :: solver
    integer(c_int) :: st
    if (allocated(module_error)) deallocate (module_error)
    st = c_create(options, solver%ptr)
  end function amrgrav_create

  !> The potential (and with options%accelerations, ax, ay, az: then required) of size(x) cells. Every array must
  !> have size(x) elements (else AMRGRAV_INVALID_INPUT, nothing computed). Contiguous arrays are passed without a
  !> copy (a non-contiguous section is copied in and out by the compiler).
  function amrgrav_compute_potential(solver, x, y, z, mass, size, potential, ax, ay, az) result(st)
    type(amrgrav_solver), intent(in) :: solver
    real(c_double), intent(in), target, contiguous :: x(:), y(:), z(:), mass(:), size(:)
    real(c_double), intent(inout), target, contiguous :: potential(:)
    real(c_double), intent(inout), target, contiguous, optional :: ax(:), ay(:), az(:)
    integer(c_int) :: st
    type(c_ptr) :: p(9)
    integer :: n
    character(len=32) :: got
    n = ubound(x, 1) - lbound(x, 1) + 1
    st = AMRGRAV_OK
    if (allocated(module_error)) deallocate (module_error)
    if (any([ubound(y, 1) - lbound(y, 1), ubound(z, 1) - lbound(z, 1), ubound(mass, 1) - lbound(mass, 1), &
             ubound(size, 1) - lbound(size, 1), ubound(potential, 1) - lbound(potential, 1)] + 1 /= n)) then
      write (got, '(i0)') n
      module_error = 'amrgrav_compute_potential: y, z, mass, size and potential must have size(x) = ' // &
                     trim(got) // ' elements each'
      st = AMRGRAV_INVALID_INPUT
      return
    end if
    if (count([present(ax), present(ay), present(az)]) == 1 .or. count([present(ax), present(ay), present(az)]) == 2) then
      module_error = 'amrgrav_compute_potential: pass all of ax, ay and az, or none'
      st = AMRGRAV_INVALID_INPUT
      return
    end if
    p = c_null_ptr
    if (n > 0) then
      p(1) = c_loc(x)
      p(2) = c_loc(y)
      p(3) = c_loc(z)
      p(4) = c_loc(mass)
      p(5) = c_loc(size)
      p(6) = c_loc(potential)
      if (present(ax)) then
        if (any([ubound(ax, 1) - lbound(ax, 1), ubound(ay, 1) - lbound(ay, 1), ubound(az, 1) - lbound(az, 1)] &
                + 1 /= n)) then
          write (got, '(i0)') n
          module_error = 'amrgrav_compute_potential: ax, ay and az must have size(x) = ' // trim(got) // &
                         ' elements each'
          st = AMRGRAV_INVALID_INPUT
          return
        end if
        p(7) = c_loc(ax)
        p(8) = c_loc(ay)
        p(9) = c_loc(az)
      end if
    end if
    st = c_compute(solver%ptr, int(n, c_size_t), p(1), p(2), p(3), p(4), p(5), p(6), p(7), p(8), p(9))
  end function amrgrav_compute_potential

  !> The message of the last failure: of this module's own checks if the last call through it failed there, else of
  !> this solver's last call (no solver: of the last amrgrav_create on this thread, or a call on a null solver).
  function amrgrav_last_error(solver) result(msg)
    type(amrgrav_solver), intent(in), optional :: solver
    character(len=:), allocatable :: msg
    if (allocated(module_error)) then
      msg = module_error
    else if (present(solver)) then
      msg = from_c_string(c_last_error(solver%ptr))
    else
      msg = from_c_string(c_last_error(c_null_ptr))
    end if
  end function amrgrav_last_error

  !> Warnings of the solver's last successful call ('' if none; no solver: of the last amrgrav_create), e.g. an
  !> Ewald table that could not be cached on disk.
  function amrgrav_last_warning(solver) result(msg)
    type(amrgrav_solver), intent(in), optional :: solver
    character(len=:), allocatable :: msg
    if (present(solver)) then
      msg = from_c_string(c_last_warning(solver%ptr))
    else
      msg = from_c_string(c_last_warning(c_null_ptr))
    end if
  end function amrgrav_last_warning

  !> Timings and counts of the solver's last computation.
  function amrgrav_get_stats(solver, stats) result(st)
    type(amrgrav_solver), intent(in) :: solver
    type(amrgrav_stats), intent(out) :: stats
    integer(c_int) :: st
    if (allocated(module_error)) deallocate (module_error)
    st = c_get_stats(solver%ptr, stats)
  end function amrgrav_get_stats

  subroutine amrgrav_destroy(solver)
    type(amrgrav_solver), intent(inout) :: solver
    call c_destroy(solver%ptr)
    solver%ptr = c_null_ptr
  end subroutine amrgrav_destroy

  !> The library's version, e.g. '0.1.0'.
  function amrgrav_version() result(v)
    character(len=:), allocatable :: v
    v = from_c_string(c_version())
  end function amrgrav_version

  !> What this build and machine have: CUDA (built, devices, usable), MPI, and what threads = 0 means now.
  function amrgrav_get_build_info(info) result(st)
    type(amrgrav_build_info), intent(out) :: info
    integer(c_int) :: st
    info%struct_size = c_sizeof(info)
    st = c_get_build_info(info)
  end function amrgrav_get_build_info

  !> Distributed solvers: the collective over `comm` (an integer communicator from `use mpi` or mpif.h; mpi_f08:
  !> pass comm%MPI_VAL) instead of MPI_COMM_WORLD. Collective over comm: after amrgrav_create, before the first step;
  !> call amrgrav_destroy before MPI_Finalize.
  function amrgrav_set_communicator(solver, comm) result(st)
    type(amrgrav_solver), intent(in) :: solver
    integer, intent(in) :: comm
    integer(c_int) :: st
    if (allocated(module_error)) deallocate (module_error)
    st = c_set_communicator(solver%ptr, int(comm, c_int))
  end function amrgrav_set_communicator

  !> The block entry: the potential (and, with options%accelerations, ax, ay, az: then required) of the blocks'
  !> interior cells, written in the density's layout and type at `potential` (c_loc of the field's first element,
  !> e.g. c_loc(unk(GPOT_VAR, 1, 1, 1, 1))). The library checks the blocks (errors name the block and cell); the
  !> arrays' lengths cannot be checked through c_ptr: every slot block_index names must exist in them.
  function amrgrav_compute_blocks(solver, blocks, potential, ax, ay, az) result(st)
    type(amrgrav_solver), intent(in) :: solver
    type(amrgrav_blocks), intent(in) :: blocks
    type(c_ptr), intent(in) :: potential
    type(c_ptr), intent(in), optional :: ax, ay, az
    integer(c_int) :: st
    type(c_ptr) :: a(3)
    if (allocated(module_error)) deallocate (module_error)
    if (count([present(ax), present(ay), present(az)]) == 1 .or. count([present(ax), present(ay), present(az)]) == 2) then
      module_error = 'amrgrav_compute_blocks: pass all of ax, ay and az, or none'
      st = AMRGRAV_INVALID_INPUT
      return
    end if
    a = c_null_ptr
    if (present(ax)) then
      a(1) = ax
      a(2) = ay
      a(3) = az
    end if
    st = c_compute_blocks(solver%ptr, blocks, potential, a(1), a(2), a(3))
  end function amrgrav_compute_blocks

  !> A system solve (amrgrav.h, amrgrav_solve_system): the cells (sources and targets), and optionally probes (targets
  !> only: probe_x, probe_y, probe_z and probe_potential together) and a subset of the cells to compute (`targets`:
  !> Fortran's 1-based cell numbers, each at most once; potential then has size(targets) elements, in that order, bitwise
  !> the full solve's values there). With options%accelerations, ax, ay, az (and probe_ax, probe_ay, probe_az with
  !> probes) are required. direct = .true.: direct summation (isolated boxes). Lengths are checked here.
  !> Particles (softened sources and targets; the kernel is options%softening): particle_x, particle_y, particle_z,
  !> particle_mass and particle_potential together, with the softening lengths either per particle
  !> (particle_softening) or one value for all (softening), and particle_ax, particle_ay, particle_az with
  !> accelerations. Pass them by keyword (after `direct`).
  function amrgrav_solve_system(solver, x, y, z, mass, size, potential, probe_x, probe_y, probe_z, probe_potential, &
                                targets, ax, ay, az, probe_ax, probe_ay, probe_az, direct, &
                                particle_x, particle_y, particle_z, particle_mass, particle_softening, softening, &
                                particle_potential, particle_ax, particle_ay, particle_az) result(st)
    type(amrgrav_solver), intent(in) :: solver
    real(c_double), intent(in), target, contiguous :: x(:), y(:), z(:), mass(:), size(:)
    real(c_double), intent(inout), target, contiguous :: potential(:)
    real(c_double), intent(in), target, contiguous, optional :: probe_x(:), probe_y(:), probe_z(:)
    real(c_double), intent(inout), target, contiguous, optional :: probe_potential(:)
    integer, intent(in), optional :: targets(:)
    real(c_double), intent(inout), target, contiguous, optional :: ax(:), ay(:), az(:)
    real(c_double), intent(inout), target, contiguous, optional :: probe_ax(:), probe_ay(:), probe_az(:)
    logical, intent(in), optional :: direct
    real(c_double), intent(in), target, contiguous, optional :: particle_x(:), particle_y(:), particle_z(:)
    real(c_double), intent(in), target, contiguous, optional :: particle_mass(:), particle_softening(:)
    real(c_double), intent(in), optional :: softening
    real(c_double), intent(inout), target, contiguous, optional :: particle_potential(:)
    real(c_double), intent(inout), target, contiguous, optional :: particle_ax(:), particle_ay(:), particle_az(:)
    integer(c_int) :: st
    type(c_system) :: sys
    type(c_system_results) :: res
    integer(c_int), allocatable, target :: t0(:)
    integer :: npart
    integer :: n, nr, np  ! lengths by ubound: the dummy `size` hides the intrinsic (assumed shape: lbound 1)
    character(len=32) :: got
    if (allocated(module_error)) deallocate (module_error)
    st = AMRGRAV_INVALID_INPUT
    n = ubound(x, 1)
    nr = n
    if (present(targets)) nr = ubound(targets, 1)
    np = 0
    if (present(probe_x)) np = ubound(probe_x, 1)
    if (any([ubound(y, 1), ubound(z, 1), ubound(mass, 1), ubound(size, 1)] /= n) .or. ubound(potential, 1) /= nr) then
      write (got, '(i0)') n
      module_error = 'amrgrav_solve_system: y, z, mass and size must have size(x) = ' // trim(got) // &
                     ' elements each, potential one per cell (or per target)'
      return
    end if
    if (count([present(probe_x), present(probe_y), present(probe_z), present(probe_potential)]) /= 0 .and. &
        count([present(probe_x), present(probe_y), present(probe_z), present(probe_potential)]) /= 4) then
      module_error = 'amrgrav_solve_system: pass all of probe_x, probe_y, probe_z and probe_potential, or none'
      return
    end if
    if (np > 0) then
      if (any([ubound(probe_y, 1), ubound(probe_z, 1), ubound(probe_potential, 1)] /= np)) then
        module_error = 'amrgrav_solve_system: probe_y, probe_z and probe_potential must have size(probe_x) elements'
        return
      end if
    end if
    if (count([present(ax), present(ay), present(az)]) == 1 .or. &
        count([present(ax), present(ay), present(az)]) == 2) then
      module_error = 'amrgrav_solve_system: pass all of ax, ay and az, or none'
      return
    end if
    npart = 0
    if (count([present(particle_x), present(particle_y), present(particle_z), present(particle_mass), &
               present(particle_potential)]) /= 0) then
      if (.not. (present(particle_x) .and. present(particle_y) .and. present(particle_z) .and. &
                 present(particle_mass) .and. present(particle_potential))) then
        module_error = 'amrgrav_solve_system: pass all of particle_x, particle_y, particle_z, particle_mass and ' // &
                       'particle_potential, or none'
        return
      end if
      npart = ubound(particle_x, 1)
      if (any([ubound(particle_y, 1), ubound(particle_z, 1), ubound(particle_mass, 1), &
               ubound(particle_potential, 1)] /= npart)) then
        module_error = 'amrgrav_solve_system: particle_y, particle_z, particle_mass and particle_potential must ' // &
                       'have size(particle_x) elements'
        return
      end if
      if (present(particle_softening) .eqv. present(softening)) then
        module_error = 'amrgrav_solve_system: pass the particles'' softening lengths as particle_softening (one ' // &
                       'per particle) or softening (one for all), not both nor neither'
        return
      end if
      if (present(particle_softening)) then
        if (ubound(particle_softening, 1) /= npart) then
          module_error = 'amrgrav_solve_system: particle_softening must have size(particle_x) elements'
          return
        end if
      end if
      if (count([present(particle_ax), present(particle_ay), present(particle_az)]) == 1 .or. &
          count([present(particle_ax), present(particle_ay), present(particle_az)]) == 2) then
        module_error = 'amrgrav_solve_system: pass all of particle_ax, particle_ay and particle_az, or none'
        return
      end if
      if (present(particle_ax)) then
        if (any([ubound(particle_ax, 1), ubound(particle_ay, 1), ubound(particle_az, 1)] /= npart)) then
          module_error = 'amrgrav_solve_system: particle_ax, particle_ay and particle_az must have ' // &
                         'size(particle_x) elements'
          return
        end if
      end if
    end if
    call c_default_system(sys)
    call c_default_system_results(res)
    sys%n_cells = int(n, c_size_t)
    sys%n_particles = int(npart, c_size_t)
    if (npart > 0) then
      sys%particle_x = c_loc(particle_x)
      sys%particle_y = c_loc(particle_y)
      sys%particle_z = c_loc(particle_z)
      sys%particle_mass = c_loc(particle_mass)
      if (present(particle_softening)) then
        sys%particle_softening = c_loc(particle_softening)
      else
        sys%softening = softening
      end if
      res%particle_potential = c_loc(particle_potential)
      if (present(particle_ax)) then
        res%particle_ax = c_loc(particle_ax)
        res%particle_ay = c_loc(particle_ay)
        res%particle_az = c_loc(particle_az)
      end if
    end if
    sys%n_probes = int(np, c_size_t)
    if (present(direct)) then
      if (direct) sys%direct = 1
    end if
    if (n > 0) then
      sys%x = c_loc(x)
      sys%y = c_loc(y)
      sys%z = c_loc(z)
      sys%mass = c_loc(mass)
      sys%size = c_loc(size)
    end if
    if (nr > 0) res%potential = c_loc(potential)
    if (present(ax) .and. nr > 0) then
      if (any([ubound(ax, 1), ubound(ay, 1), ubound(az, 1)] /= nr)) then
        module_error = 'amrgrav_solve_system: ax, ay and az must have one element per cell (or per target)'
        return
      end if
      res%ax = c_loc(ax)
      res%ay = c_loc(ay)
      res%az = c_loc(az)
    end if
    if (np > 0) then
      sys%probe_x = c_loc(probe_x)
      sys%probe_y = c_loc(probe_y)
      sys%probe_z = c_loc(probe_z)
      res%probe_potential = c_loc(probe_potential)
      if (present(probe_ax)) then
        if (.not. (present(probe_ay) .and. present(probe_az))) then
          module_error = 'amrgrav_solve_system: pass all of probe_ax, probe_ay and probe_az, or none'
          return
        end if
        if (any([ubound(probe_ax, 1), ubound(probe_ay, 1), ubound(probe_az, 1)] /= np)) then
          module_error = 'amrgrav_solve_system: probe_ax, probe_ay and probe_az must have size(probe_x) elements'
          return
        end if
        res%probe_ax = c_loc(probe_ax)
        res%probe_ay = c_loc(probe_ay)
        res%probe_az = c_loc(probe_az)
      end if
    end if
    if (present(targets)) then
      allocate (t0(max(1, nr)))
      if (nr > 0) t0(1:nr) = int(targets - 1, c_int)  ! 0-based for C; the library checks the range
      sys%targets = c_loc(t0)
      sys%n_targets = int(nr, c_size_t)
    end if
    st = c_solve_system(solver%ptr, sys, res)
  end function amrgrav_solve_system

  !> 1 when the solver's last block computation kept the previous call's tree (unchanged mesh), 0 when it built one.
  function amrgrav_tree_reused(solver) result(r)
    type(amrgrav_solver), intent(in) :: solver
    integer(c_int) :: r
    r = c_tree_reused(solver%ptr)
  end function amrgrav_tree_reused

  !> The cube side of a block's cells from its deltas (FLASH: Grid_getDeltas), or AMRGRAV_INVALID_INPUT with a
  !> message when they differ by more than 1e-12 relative: amrgrav's cells are cubes (one size per cell), so a mesh
  !> with dx /= dy or dz is not supported.
  function amrgrav_cube_side(deltas, side) result(st)
    real(c_double), intent(in) :: deltas(3)
    real(c_double), intent(out) :: side
    integer(c_int) :: st
    character(len=96) :: got
    side = deltas(1)
    st = AMRGRAV_OK
    if (allocated(module_error)) deallocate (module_error)
    if (abs(deltas(2) - deltas(1)) > 1d-12 * abs(deltas(1)) .or. abs(deltas(3) - deltas(1)) > 1d-12 * abs(deltas(1))) then
      write (got, '(3(es23.16,1x))') deltas
      module_error = 'non-cubic cells (dx, dy, dz = ' // trim(got) // '): amrgrav treats every cell as a cube of one '// &
                     'size; meshes with dx /= dy or dz are not supported'
      st = AMRGRAV_INVALID_INPUT
    end if
  end function amrgrav_cube_side

end module amrgrav
