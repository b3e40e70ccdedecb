! A Fortran MPI code's own communicator (amrgrav_set_communicator with the integer handle of `use mpi`): the world is
! split into two halves (color = mod(rank, 2)); each half solves its own cells (cells with mod(index, 2) = color,
! dealt out over the half's ranks) as one distributed collective, and every rank compares its share with a local
! solve of all its half's cells. Rank 0 prints one JSON line; error stop when a check fails. Built with mpifort and
! run under mpirun -np 4 by test/fortran.test.ts.
program comm_split
  use, intrinsic :: iso_c_binding
  use mpi
  use amrgrav
  implicit none
  integer, parameter :: N = 4000
  real(c_double) :: x(N), y(N), z(N), m(N), h(N)
  real(c_double), allocatable :: ox(:), oy(:), oz(:), om(:), oh(:), op(:), gx(:), gy(:), gz(:), gm(:), gh(:), gp(:)
  type(amrgrav_options) :: o, lo
  type(amrgrav_solver) :: dist, loc
  integer :: ierr, rank, size, color, half, hrank, hsize, i, k, a, nown, ngroup
  integer(c_int) :: stSet, stDist, stLocal
  real(c_double) :: d, worst
  integer, allocatable :: seed(:)
  logical :: ok, allOk

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  ! the same cells on every rank: the intrinsic generator from one fixed seed
  call random_seed(size=k)
  allocate (seed(k))
  seed = [(12345 + 7 * i, i = 1, k)]
  call random_seed(put=seed)
  call random_number(x)
  call random_number(y)
  call random_number(z)
  call random_number(m)
  m = m + 0.5d0
  h = 1d-3
  color = mod(rank, 2)
  call MPI_Comm_split(MPI_COMM_WORLD, color, rank, half, ierr)
  call MPI_Comm_rank(half, hrank, ierr)
  call MPI_Comm_size(half, hsize, ierr)

  ! the half's cells: indices i (0-based) with mod(i, 2) = color; this rank owns every hsize-th of them
  ngroup = 0
  nown = 0
  do i = 0, N - 1
    if (mod(i, 2) /= color) cycle
    ngroup = ngroup + 1
    if (mod(ngroup - 1, hsize) == hrank) nown = nown + 1
  end do
  allocate (ox(nown), oy(nown), oz(nown), om(nown), oh(nown), op(nown))
  allocate (gx(ngroup), gy(ngroup), gz(ngroup), gm(ngroup), gh(ngroup), gp(ngroup))
  a = 0
  k = 0
  do i = 0, N - 1
    if (mod(i, 2) /= color) cycle
    a = a + 1
    gx(a) = x(i + 1); gy(a) = y(i + 1); gz(a) = z(i + 1); gm(a) = m(i + 1); gh(a) = h(i + 1)
    if (mod(a - 1, hsize) == hrank) then
      k = k + 1
      ox(k) = gx(a); oy(k) = gy(a); oz(k) = gz(a); om(k) = gm(a); oh(k) = gh(a)
    end if
  end do

  call amrgrav_default_options(o)
  o%G = 1d0
  o%backend = AMRGRAV_BACKEND_CPU
  o%threads = 1
  lo = o
  o%distributed = 1
  if (amrgrav_create(o, dist) /= AMRGRAV_OK) error stop 'create (distributed)'
  stSet = amrgrav_set_communicator(dist, half)
  stDist = amrgrav_compute_potential(dist, ox, oy, oz, om, oh, op)
  if (stDist /= AMRGRAV_OK) print '(a)', amrgrav_last_error(dist)
  call amrgrav_destroy(dist)
  if (amrgrav_create(lo, loc) /= AMRGRAV_OK) error stop 'create (local)'
  stLocal = amrgrav_compute_potential(loc, gx, gy, gz, gm, gh, gp)
  call amrgrav_destroy(loc)

  d = 0
  k = 0
  do a = 1, ngroup
    if (mod(a - 1, hsize) /= hrank) cycle
    k = k + 1
    d = max(d, abs(op(k) - gp(a)) / abs(gp(a)))
  end do
  ok = stSet == AMRGRAV_OK .and. stDist == AMRGRAV_OK .and. stLocal == AMRGRAV_OK .and. k == nown
  call MPI_Reduce(d, worst, 1, MPI_DOUBLE_PRECISION, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  call MPI_Reduce(ok, allOk, 1, MPI_LOGICAL, MPI_LAND, 0, MPI_COMM_WORLD, ierr)
  call MPI_Comm_free(half, ierr)
  if (rank == 0) then
    allOk = allOk .and. worst < 1d-3
    print '(a,i0,a,i0,a,es10.3,a,a,a)', '{"ranks":', size, ',"halfRanks":', hsize, ',"halves":', worst, &
      ',"ok":', trim(merge('true ', 'false', allOk)), '}'
  end if
  call MPI_Bcast(allOk, 1, MPI_LOGICAL, 0, MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
  if (.not. allOk) error stop 1

end program comm_split
