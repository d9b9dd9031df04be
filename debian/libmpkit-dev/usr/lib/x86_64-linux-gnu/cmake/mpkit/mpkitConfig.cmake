# SPDX-License-Identifier: MIT
# find_package(mpkit) support: the imported targets
#   mpkit::mpkit         the shared library (libmpkit.so)
#   mpkit::mpkit_static  the static library (libmpkit.a)
# Paths are relative to this file where the install allowed it, so the
# installed tree can move.
cmake_minimum_required(VERSION 3.5)
include(CMakeFindDependencyMacro)
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_dependency(Threads)

get_filename_component(_mpkit_prefix "${CMAKE_CURRENT_LIST_DIR}/../../../.." ABSOLUTE)
set(mpkit_INCLUDE_DIR "${_mpkit_prefix}/include")
set(mpkit_LIBRARY "${_mpkit_prefix}/lib/x86_64-linux-gnu/libmpkit.so")
set(mpkit_STATIC_LIBRARY "${_mpkit_prefix}/lib/x86_64-linux-gnu/libmpkit.a")
set(mpkit_VERSION "0.1.0")

if(NOT EXISTS "${mpkit_INCLUDE_DIR}/mpkit.h")
	set(mpkit_FOUND FALSE)
	set(mpkit_NOT_FOUND_MESSAGE "mpkit.h not in ${mpkit_INCLUDE_DIR} (install libmpkit-dev)")
	return()
endif()

if(NOT TARGET mpkit::mpkit AND EXISTS "${mpkit_LIBRARY}")
	add_library(mpkit::mpkit SHARED IMPORTED)
	set_target_properties(mpkit::mpkit PROPERTIES
		IMPORTED_LOCATION "${mpkit_LIBRARY}"
		IMPORTED_SONAME "libmpkit.so.0"
		INTERFACE_INCLUDE_DIRECTORIES "${mpkit_INCLUDE_DIR}"
		INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()
if(NOT TARGET mpkit::mpkit_static AND EXISTS "${mpkit_STATIC_LIBRARY}")
	add_library(mpkit::mpkit_static STATIC IMPORTED)
	set_target_properties(mpkit::mpkit_static PROPERTIES
		IMPORTED_LOCATION "${mpkit_STATIC_LIBRARY}"
		INTERFACE_INCLUDE_DIRECTORIES "${mpkit_INCLUDE_DIR}"
		INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()
if(NOT TARGET mpkit::mpkit)
	set(mpkit_FOUND FALSE)
	set(mpkit_NOT_FOUND_MESSAGE "${mpkit_LIBRARY} is missing")
	return()
endif()
set(mpkit_LIBRARIES mpkit::mpkit)
set(mpkit_INCLUDE_DIRS "${mpkit_INCLUDE_DIR}")
unset(_mpkit_prefix)
