/* SPDX-License-Identifier: MIT */
#ifndef MPK_SCAN_CMD_H
#define MPK_SCAN_CMD_H
int mpk_cmd_scan(int argc, char **argv); /* mpkit scan */
#endif
