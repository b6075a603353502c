# `make test`: installs the build into a scratch prefix, then builds and runs a project outside
# Saltus against it, once through find_package(saltus) and once through pkg-config.
# -DBUILD_DIR=<Saltus build> -DSOURCE_DIR=<this folder> -DWORK_DIR=<scratch folder>
# [-DPYTHON=<interpreter> -DPYTHON_DIR=<the package's folder under the prefix>]: also imports the
# installed Python package.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${what} failed (${status}):\n${out}\n${err}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()

run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(file bin/saltus include/saltus/core/problem.hpp include/saltus/examples/builtin.hpp
        lib/cmake/saltus/saltusConfig.cmake lib/pkgconfig/saltus.pc)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "cmake --install did not install ${file}")
  endif()
endforeach()
run("the installed command" ${prefix}/bin/saltus run galan)
if(NOT output MATCHES "G += +2\\.00290746")
  message(FATAL_ERROR "the installed command printed:\n${output}")
endif()

# find_package(saltus)
run("configuring the consumer" ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/consumer -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_BUILD_TYPE=Release)
run("building the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
run("running the consumer" ${WORK_DIR}/consumer/consumer)
set(expected "decay x_T = 0.606531, d/dk = -0.606531\ngalan G = 20.029075, dG/dp = -2.311953\n"
             "equations x_T = 0.606531\noptimum k = 2.000000\n")
string(JOIN "" expected ${expected})
if(NOT output STREQUAL expected)
  message(FATAL_ERROR "the consumer printed:\n${output}\nexpected:\n${expected}")
endif()

# pkg-config
set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
run("pkg-config" pkg-config --cflags --libs saltus)
string(STRIP "${output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run("compiling with pkg-config's flags" c++ -O1 ${SOURCE_DIR}/consumer.cpp -o ${WORK_DIR}/consumer_pc ${flags})
run("running the pkg-config consumer" ${WORK_DIR}/consumer_pc)
if(NOT output STREQUAL expected)
  message(FATAL_ERROR "the pkg-config consumer printed:\n${output}")
endif()

# The Python package, when the build has it.
if(PYTHON)
  set(ENV{PYTHONPATH} ${prefix}/${PYTHON_DIR})
  # A script file: semicolons would split a -c argument into a CMake list.
  file(WRITE ${WORK_DIR}/import_saltus.py
       "import saltus\ng = saltus.load('galan').adjoint().gradient['G']['p']\nprint(f'{g:.6f}', saltus.__file__)\n")
  run("the installed Python package" ${PYTHON} ${WORK_DIR}/import_saltus.py)
  if(NOT output MATCHES "^-2\\.311953 ${prefix}/${PYTHON_DIR}/saltus/__init__.py")
    message(FATAL_ERROR "the installed Python package printed:\n${output}")
  endif()
endif()
message(STATUS "installed Saltus works through find_package, pkg-config and Python")
