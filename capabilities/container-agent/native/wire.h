/*
 * wire.h — big-endian integers of the frames, shared by pai-agent.c and pai-egress-relay.c.
 */
#ifndef PAI_WIRE_H
#define PAI_WIRE_H

#include <stdint.h>

static inline void put_u32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

static inline uint32_t get_u32(const unsigned char *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

#endif
