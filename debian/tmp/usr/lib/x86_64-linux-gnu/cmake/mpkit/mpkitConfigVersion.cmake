# SPDX-License-Identifier: MIT
# find_package(mpkit X.Y) accepts this version when it is X.Y or later
# with the same ABI: the same major version, and from 1.0 on any minor;
# before 1.0 every minor release may break the API, so 0.Y must match.
set(PACKAGE_VERSION "0.1.0")
set(PACKAGE_VERSION_COMPATIBLE FALSE)
if(PACKAGE_FIND_VERSION)
	string(REPLACE "." ";" _have "${PACKAGE_VERSION}")
	list(GET _have 0 _have_major)
	list(GET _have 1 _have_minor)
	if(PACKAGE_FIND_VERSION_MAJOR EQUAL _have_major AND
	   NOT PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION AND
	   (_have_major GREATER 0 OR PACKAGE_FIND_VERSION_MINOR EQUAL _have_minor))
		set(PACKAGE_VERSION_COMPATIBLE TRUE)
	endif()
	if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
		set(PACKAGE_VERSION_EXACT TRUE)
	endif()
else()
	set(PACKAGE_VERSION_COMPATIBLE TRUE)
endif()
if(NOT CMAKE_SIZEOF_VOID_P STREQUAL "8" AND CMAKE_SIZEOF_VOID_P)
	set(PACKAGE_VERSION_COMPATIBLE FALSE)
	set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
