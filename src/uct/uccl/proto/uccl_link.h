/*
 * A port's data rate from the speed and width codes of ibv_port_attr
 * (active_speed, active_width; IBTA PortInfo's LinkSpeedActive and
 * LinkWidthActive, which RoCE drivers fill from the Ethernet speed too).
 * Pure: the codes are plain numbers here, so unit tests need no device.
 */
#ifndef UCT_UCCL_LINK_H_
#define UCT_UCCL_LINK_H_

#include <stdint.h>

/* Data bits per second of one lane at each speed code: the signalling
 * rate less its line coding (8b/10b up to QDR, 64b/66b from FDR10 on),
 * what the link carries of packets. 0: a code this table does not know. */
static inline uint64_t uct_uccl_link_lane_mbps(unsigned speed)
{
    switch (speed) {
    case 1:   return 2000;   /* SDR 2.5 Gbit/s */
    case 2:   return 4000;   /* DDR 5 */
    case 4:   return 8000;   /* QDR 10 */
    case 8:   return 10000;  /* FDR10 10.3125 */
    case 16:  return 13636;  /* FDR 14.0625 */
    case 32:  return 25000;  /* EDR 25.78125 */
    case 64:  return 50000;  /* HDR */
    case 128: return 100000; /* NDR */
    default:  return 0;
    }
}

/* Lanes of each width code; 0: unknown */
static inline unsigned uct_uccl_link_lanes(unsigned width)
{
    switch (width) {
    case 1:  return 1;
    case 2:  return 4;
    case 4:  return 8;
    case 8:  return 12;
    case 16: return 2;
    default: return 0;
    }
}

/* The port's data rate in bit/s; 0 when either code is unknown */
static inline uint64_t uct_uccl_link_rate_bps(unsigned speed, unsigned width)
{
    return uct_uccl_link_lane_mbps(speed) * uct_uccl_link_lanes(width) *
           1000000ull;
}

#endif
