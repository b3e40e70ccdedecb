# amrgrav's MPI layer. Include from the top-level CMakeLists.txt after amrgrav_core is defined.
# Defines amrgrav_mpi (static library: the MPI world, the LET exchange and the distributed solve's driver; no backend:
# the rank engines are cpu/'s and cuda/'s, handed over by api/) and sets AMRGRAV_HAVE_MPI. Option AMRGRAV_MPI: ON
# (default; MPI is used when found, the build goes on without it) or OFF.
option(AMRGRAV_MPI "Build the distributed (MPI) solve when an MPI library is found" ON)

set(AMRGRAV_HAVE_MPI OFF)
if(AMRGRAV_MPI)
  # the CXX component (the project enables no C), without the deprecated C++ bindings
  set(MPI_CXX_SKIP_MPICXX ON)
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(AMRGRAV_HAVE_MPI ON)
  endif()
endif()

set(_amrgrav_mpi_sources native/mpi/mpi_world.cpp native/mpi/agreement.cpp native/mpi/distributed_solve.cpp
  native/mpi/distributed_fmm.cpp)
if(AMRGRAV_HAVE_MPI)
  list(APPEND _amrgrav_mpi_sources native/mpi/let_exchange.cpp native/mpi/particle_census.cpp)
endif()
add_library(amrgrav_mpi STATIC ${_amrgrav_mpi_sources})
target_link_libraries(amrgrav_mpi PUBLIC amrgrav_core)
target_compile_options(amrgrav_mpi PRIVATE -O3 -Wall -Wextra ${AMRGRAV_NO_CONTRACT})  # as the core (CMakeLists.txt)
if(AMRGRAV_HAVE_MPI)
  # OMPI_SKIP_MPICXX: the C++ bindings would leave an undefined MPI C++ symbol when Node loads the addon
  target_compile_definitions(amrgrav_mpi PRIVATE AMRGRAV_HAVE_MPI=1 OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
  target_link_libraries(amrgrav_mpi PRIVATE MPI::MPI_CXX ${CMAKE_DL_LIBS})
  message(STATUS "amrgrav: MPI ${MPI_CXX_VERSION} found (${MPI_CXX_LIB_NAMES}): distributed solve enabled")
elseif(AMRGRAV_MPI)
  message(STATUS "amrgrav: no MPI library found: distributed solve disabled (apt-get install libopenmpi-dev)")
else()
  message(STATUS "amrgrav: AMRGRAV_MPI=OFF: distributed solve disabled")
endif()
