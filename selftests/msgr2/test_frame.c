// SPDX-License-Identifier: GPL-2.0
/*
 * msgr2 engine: frames against byte vectors.
 *
 *   - the worked examples of msgr2.md section 11 (encode and decode),
 *   - the CRC-mode capture of msgr2-verified.md 7.1 (a client replays the
 *     mon's frames and must send the capture's frames byte for byte),
 *   - the SECURE capture of msgr2-verified.md 7.2 (same, with a replayed
 *     CephX exchange: AUTH_SIGNATURE, CLIENT_IDENT and MESSAGE re-encrypted
 *     byte-identically, SERVER_IDENT and the reply decrypted),
 *   - the secure-mode sanity vector of msgr2.md 8,
 *   - every malformed-input path: the reason and errno, no over-read.
 */
#include <stdio.h>
#include <stdlib.h>

/* the harness compares int literals with unsigned fields */
#pragma GCC diagnostic ignored "-Wsign-compare"

#include "kselftest_harness.h"
#include "lib_pair.h"

/* ---- vectors, verbatim from the reference documents ----------------------- */

/* 7.1 #1 C>S banner (26 bytes) */
static const char crc_f1[] =
	"63 65 70 68 20 76 32 0a 10 00 01 00 00 00 00 00 "
	"00 00 01 00 00 00 00 00 00 00";

/* 7.1 #2 S>C banner (26 bytes) */
static const char crc_f2[] =
	"63 65 70 68 20 76 32 0a 10 00 01 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00";

/* 7.1 #3 C>S HELLO (72 bytes) */
static const char crc_f3[] =
	"01 01 24 00 00 00 08 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 3f bd 6b 06 "
	"08 01 01 01 1c 00 00 00 02 00 00 00 00 00 00 00 "
	"10 00 00 00 02 00 0d 3e 7f 00 00 01 00 00 00 00 "
	"00 00 00 00 7f 9a 13 a6";

/* 7.1 #4 S>C HELLO (72 bytes) */
static const char crc_f4[] =
	"01 01 24 00 00 00 08 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 3f bd 6b 06 "
	"01 01 01 01 1c 00 00 00 02 00 00 00 00 00 00 00 "
	"10 00 00 00 02 00 98 88 7f 00 00 01 00 00 00 00 "
	"00 00 00 00 e1 7e 7a 78";

/* 7.1 #5 C>S AUTH_REQUEST (74 bytes) */
static const char crc_f5[] =
	"02 01 26 00 00 00 08 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 8c 5e e4 be "
	"01 00 00 00 01 00 00 00 01 00 00 00 16 00 00 00 "
	"0a 08 00 00 00 05 00 00 00 61 64 6d 69 6e 00 00 "
	"00 00 00 00 00 00 d8 ed e5 0c";

/* 7.1 #6 S>C AUTH_DONE (52 bytes) */
static const char crc_f6[] =
	"06 01 10 00 00 00 08 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 5b 06 30 a6 "
	"27 10 00 00 00 00 00 00 01 00 00 00 00 00 00 00 "
	"62 63 85 69";

/* 7.1 #7 C>S AUTH_SIGNATURE (68 bytes) */
static const char crc_f7[] =
	"07 01 20 00 00 00 08 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 a8 0c 98 72 "
	"00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
	"55 c9 6e 75";

/* 7.1 #8 S>C AUTH_SIGNATURE (68 bytes) */
static const char crc_f8[] =
	"07 01 20 00 00 00 08 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 a8 0c 98 72 "
	"00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
	"55 c9 6e 75";

/* 7.1 #9 C>S CLIENT_IDENT (159 bytes) */
static const char crc_f9[] =
	"08 01 7b 00 00 00 08 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 73 8a 98 95 "
	"02 01 00 00 00 01 01 01 1c 00 00 00 03 00 00 00 "
	"24 a8 43 23 10 00 00 00 02 00 00 00 7f 00 00 01 "
	"00 00 00 00 00 00 00 00 01 01 01 1c 00 00 00 02 "
	"00 00 00 00 00 00 00 10 00 00 00 02 00 0d 3e 7f "
	"00 00 01 00 00 00 00 00 00 00 00 27 10 00 00 00 "
	"00 00 00 01 00 00 00 00 00 00 00 fe aa a4 7a b8 "
	"8e 01 2f 00 00 00 00 00 00 00 00 00 00 00 00 00 "
	"00 00 00 b4 2a cb 67 93 14 23 e5 a6 75 4e c7";

/* 7.1 #10 S>C SERVER_IDENT (124 bytes) */
static const char crc_f10[] =
	"09 01 58 00 00 00 08 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 83 a1 f3 e6 "
	"02 01 00 00 00 01 01 01 1c 00 00 00 02 00 00 00 "
	"00 00 00 00 10 00 00 00 02 00 0d 3e 7f 00 00 01 "
	"00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
	"19 00 00 00 00 00 00 00 ff ff fd ff bd cf 01 3f "
	"00 00 04 02 00 02 01 0c 01 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 e5 a1 23 5f";

/* 7.1 #11 C>S MESSAGE type 19 (108 bytes) */
static const char crc_f11[] =
	"11 02 29 00 00 00 08 00 12 00 00 00 08 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 d1 01 2e 8f "
	"01 00 00 00 00 00 00 00 07 00 00 00 00 00 00 00 "
	"13 00 7f 00 01 00 00 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 0b 6b fe 5a 95 55 bd "
	"b8 4c aa fe 7a 06 00 00 00 6f 73 64 6d 61 70 0e "
	"89 8b 7a af 00 00 00 00 00 00 00 00";

/* 7.1 #12 S>C MESSAGE (114 bytes) */
static const char crc_f12[] =
	"11 02 29 00 00 00 08 00 18 00 00 00 08 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 b2 25 5a 5e "
	"01 00 00 00 00 00 00 00 07 00 00 00 00 00 00 00 "
	"14 00 c4 00 02 00 00 00 00 00 00 00 01 00 00 00 "
	"00 00 00 00 03 02 00 00 00 c7 0c f3 9d 95 55 bd "
	"b8 4c aa fe 7a 01 00 00 00 00 00 00 00 01 00 00 "
	"00 00 00 00 00 0e 22 39 95 5d 00 00 00 00 00 00 "
	"00 00";

/* 7.2 #1 C>S banner (26 bytes) */
static const char sec_f1[] =
	"63 65 70 68 20 76 32 0a 10 00 01 00 00 00 00 00 "
	"00 00 01 00 00 00 00 00 00 00";

/* 7.2 #2 S>C banner (26 bytes) */
static const char sec_f2[] =
	"63 65 70 68 20 76 32 0a 10 00 01 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00";

/* 7.2 #3 C>S HELLO (72 bytes) */
static const char sec_f3[] =
	"01 01 24 00 00 00 08 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 3f bd 6b 06 "
	"08 01 01 01 1c 00 00 00 02 00 00 00 00 00 00 00 "
	"10 00 00 00 02 00 0d 3f 7f 00 00 01 00 00 00 00 "
	"00 00 00 00 1a a2 c1 96";

/* 7.2 #4 S>C HELLO (72 bytes) */
static const char sec_f4[] =
	"01 01 24 00 00 00 08 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 3f bd 6b 06 "
	"01 01 01 01 1c 00 00 00 02 00 00 00 00 00 00 00 "
	"10 00 00 00 02 00 aa 92 7f 00 00 01 00 00 00 00 "
	"00 00 00 00 c2 07 c3 c7";

/* 7.2 #5 C>S AUTH_REQUEST (74 bytes) */
static const char sec_f5[] =
	"02 01 26 00 00 00 08 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 8c 5e e4 be "
	"02 00 00 00 01 00 00 00 02 00 00 00 16 00 00 00 "
	"0a 08 00 00 00 05 00 00 00 61 64 6d 69 6e 00 00 "
	"00 00 00 00 00 00 a3 ce b8 f6";

/* 7.2 #6 S>C AUTH_REPLY_MORE (49 bytes) */
static const char sec_f6[] =
	"04 01 0d 00 00 00 08 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 6a 09 4b c5 "
	"09 00 00 00 01 51 62 53 7e a0 8d f8 47 82 21 a9 "
	"09";

/* 7.2 #7 C>S AUTH_REQUEST_MORE (76 bytes) */
static const char sec_f7[] =
	"05 01 28 00 00 00 08 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 b8 3a c7 5b "
	"24 00 00 00 00 01 03 01 5d 80 82 91 23 3b d0 3c "
	"a8 63 42 2d d2 9b 46 01 00 00 00 00 00 00 00 00 "
	"00 00 00 00 17 00 00 00 e8 1b f8 40";

/* 7.2 #8 S>C AUTH_DONE (1063 bytes) */
static const char sec_f8[] =
	"06 01 03 04 00 00 08 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 2c 09 20 b9 "
	"1a 10 00 00 00 00 00 00 02 00 00 00 f3 03 00 00 "
	"00 01 00 00 00 00 01 01 00 00 00 20 00 00 00 01 "
	"30 00 00 00 07 f1 90 16 ed f0 c3 86 b7 58 69 2b "
	"79 90 3f bf fc e6 ff b0 f9 83 d0 54 60 49 69 12 "
	"6b cb 4d 0d 8f 24 ad c4 b5 c6 3a e9 f7 25 86 31 "
	"03 75 1d bd 00 6d 00 00 00 01 02 00 00 00 00 00 "
	"00 00 60 00 00 00 a7 41 e5 a9 bd be 8b e6 03 b9 "
	"f1 6f 70 2f 69 a8 b8 35 81 63 48 81 72 15 77 1e "
	"fb e8 43 70 fd 28 df 8b 2c 75 d3 d3 e0 79 c3 b3 "
	"82 96 27 64 b0 3f 27 b9 f3 04 e8 f9 67 f2 4e 75 "
	"c3 93 40 0c e6 e6 4f ef dd aa 77 04 75 49 58 cc "
	"c3 c3 f4 78 ae b6 21 c5 66 2f f5 f0 a0 d3 14 26 "
	"18 2a 75 b7 35 14 54 00 00 00 50 00 00 00 c6 f5 "
	"82 9f 54 f5 96 06 f7 34 38 c3 64 a4 b4 c3 d0 42 "
	"92 96 87 c6 60 22 b3 2b 65 0f 4f 41 58 59 d9 37 "
	"e3 56 6f 35 dc 7f 39 ff 7d 77 0f 55 7f a9 81 b3 "
	"d4 a6 bb 85 e6 24 1e d3 8e c9 1b 25 8e dd 3d b0 "
	"6f 6e 7b 40 85 0a 3e e9 1b 99 a3 66 5f b6 e1 02 "
	"00 00 01 04 00 00 00 01 00 00 00 01 30 00 00 00 "
	"7a 33 15 92 56 8f f5 98 ea 43 b4 1c 35 93 bf 55 "
	"78 79 43 bf cd 83 66 bf f7 da fa 56 06 82 6a 0c "
	"a7 67 a0 bd b8 37 0b 72 03 b8 1b 85 d9 53 97 18 "
	"00 6d 00 00 00 01 02 00 00 00 00 00 00 00 60 00 "
	"00 00 4b 97 ec 4a 50 ad 77 a9 d5 5a 11 2f 25 33 "
	"dc 7d d6 b7 14 f4 46 57 a5 ad 72 fd f3 cb eb 35 "
	"d3 34 0e b7 2d 71 61 1d 82 a5 81 9f 9e f9 6a 26 "
	"dc 2e a1 f3 56 88 b7 ee 92 ae d1 01 ff 9f b0 01 "
	"29 09 f8 1e f3 ba c7 ab 9c 11 68 ec 4e 56 6c 06 "
	"54 08 db bb b4 9d da b2 ec 6d 00 8b 24 fb e3 00 "
	"27 a1 02 00 00 00 01 30 00 00 00 7a 33 15 92 56 "
	"8f f5 98 ea 43 b4 1c 35 93 bf 55 8c 08 bd 7c a8 "
	"0e 89 3d da d0 0a 62 17 56 e7 e8 27 99 64 3d de "
	"3e e9 0e e6 73 02 d6 01 77 86 21 00 7d 00 00 00 "
	"01 02 00 00 00 00 00 00 00 70 00 00 00 d5 16 96 "
	"7d 71 2a a9 ab 99 17 d6 2c 78 74 33 07 c4 34 4e "
	"45 66 3d 63 1e 27 da 53 c0 61 c3 44 3f 0f 65 fb "
	"84 c5 c2 a6 ff 98 56 3c e8 7b 0b 84 61 27 52 15 "
	"fa 4f 87 c1 cc 3a e1 2d f2 74 fb c7 59 6d 70 d4 "
	"85 6f e0 a2 bc 12 3c 6b ed ab 2e 19 8a 77 23 c6 "
	"90 e6 bf 29 d1 7c 49 6a 7b 52 a7 50 c0 c7 43 ef "
	"e6 cb 8d e9 ee 69 0d b5 6a c5 71 94 53 04 00 00 "
	"00 01 30 00 00 00 7a 33 15 92 56 8f f5 98 ea 43 "
	"b4 1c 35 93 bf 55 66 2b 1f da 5e 69 1f 2b d5 46 "
	"6f 7e d6 65 c2 e8 9c da e6 e8 48 52 5e 56 67 d3 "
	"0f a5 1e dc ef d4 00 7d 00 00 00 01 02 00 00 00 "
	"00 00 00 00 70 00 00 00 1d d5 8d 3d 0c ed d5 45 "
	"af 48 d0 4e 19 9a 19 22 b3 77 dd f6 0a ae 39 a5 "
	"91 78 91 ed 39 1b 4c 6d 97 ac 96 c2 1f 05 5a 09 "
	"09 41 5c f1 c9 67 ce 8f 75 7e 2c a6 df e0 6c ad "
	"79 d6 61 70 e6 96 fe 54 ad 32 aa 28 f5 7a 00 59 "
	"f8 98 8b 0e d5 c2 ed 92 eb 23 d1 e5 7b ee 7b b3 "
	"c4 dd ab 23 9c f7 a1 06 6d d1 04 be e7 18 e7 e1 "
	"44 aa 3e e9 ef d4 0b cc 10 00 00 00 01 30 00 00 "
	"00 7a 33 15 92 56 8f f5 98 ea 43 b4 1c 35 93 bf "
	"55 42 7f e2 70 f8 c0 24 91 de c8 0f 02 1f 27 53 "
	"34 9c 56 f9 f1 72 47 4c 79 1b f7 18 0d b9 d5 62 "
	"c6 00 7d 00 00 00 01 02 00 00 00 00 00 00 00 70 "
	"00 00 00 2e cb f4 b9 d5 fd 69 a0 81 97 c4 9d f5 "
	"1d 25 80 f3 ad 8e 6e 12 f5 28 78 e7 17 95 db 1f "
	"98 1f 6f 75 7a 73 ff de d5 18 1f 83 9d db 44 70 "
	"d0 49 f0 3e eb 20 dc 98 e4 ff 94 3f 31 57 40 8f "
	"7e 35 a9 68 58 18 f4 b2 73 56 47 b3 ac 4b 94 a6 "
	"cd 1d 65 e7 83 26 ec 50 10 d4 2b 9a a6 62 ee fe "
	"f9 3d 10 92 41 89 b2 1f cd ab e2 78 97 78 3b ed "
	"20 92 5a c0 97 2f cb";

/* 7.2 #9 C>S AUTH_SIGNATURE (96 bytes) */
static const char sec_f9[] =
	"6c 95 7c 13 02 a6 84 7e a4 f6 28 9e e1 b1 ff 87 "
	"6b 2e 85 44 e5 96 2e f5 79 c1 4d 24 00 e5 17 4d "
	"00 49 70 78 5a 68 32 cd a7 68 9f 84 6d f5 a8 a3 "
	"5c 21 73 f8 3b 7b 86 e5 4f 97 f7 9a 3a b6 14 ce "
	"47 42 a4 33 26 d6 c1 a6 b4 6e 43 66 97 72 4f a2 "
	"e0 0e 68 33 44 9a 3a 99 11 ca b6 d3 89 5b 4b de";

/* 7.2 #10 S>C AUTH_SIGNATURE (96 bytes) */
static const char sec_f10[] =
	"a3 b8 17 04 dc 09 22 bb d4 5d e8 e1 41 96 a8 b9 "
	"db ae cf c3 6d 1e 9c 42 88 56 9f c3 f7 86 b7 9d "
	"ab a4 e7 8f 77 27 b0 32 a8 3f a3 42 36 90 1b 51 "
	"b4 4f dd c3 a3 78 f9 fa f8 d1 00 81 a1 b8 05 83 "
	"cc 5a 03 13 dc 0a 5d 21 dc 47 b1 6b 2c c8 4e fb "
	"99 fd db 54 d8 df 4e 97 d9 69 4c 43 0d f8 52 2f";

/* 7.2 #11 C>S CLIENT_IDENT (192 bytes) */
static const char sec_f11[] =
	"29 01 f4 98 94 92 ad f3 ee 34 ed 4c aa c4 ec 32 "
	"b7 aa 35 b6 a3 14 97 99 f4 a7 f5 0b fb 15 5b 87 "
	"39 8d 38 b0 ba 2f e1 39 66 7e 11 51 48 89 aa f6 "
	"fc bb d7 17 a2 35 25 69 9a e1 83 20 75 4b cd 74 "
	"4a 3d 66 95 49 cf eb 3e d5 08 24 e4 b9 b3 2e 29 "
	"da 8e 4b c9 8f 00 46 0b f4 7e 56 4b 60 77 97 58 "
	"19 78 10 d4 39 1d 7f 89 45 e4 5a 4e 13 62 02 37 "
	"3d 57 19 a1 91 88 ee 3f 6d 04 ae aa 84 c0 4a 65 "
	"24 4d ce 51 9d 04 3d e8 09 2a 64 b3 51 dc fc 5d "
	"a0 de b9 78 a0 b9 20 6f 01 7e a8 38 12 09 fa 55 "
	"37 6c 6f 18 c0 77 16 f8 db 9d 28 f2 81 94 e7 33 "
	"75 08 71 62 63 bc 3f 7a 9a 37 db ee 39 6c 68 40";

/* 7.2 #12 S>C SERVER_IDENT (160 bytes) */
static const char sec_f12[] =
	"3a 78 95 67 54 82 5e c3 6b b6 d6 df 06 88 3d 64 "
	"cc 78 4a b8 23 79 ef 53 76 94 6c 10 4a 42 ae d0 "
	"72 1f 98 12 c1 da ed 84 c8 8d 03 3f ce d0 00 9c "
	"47 0a 77 e7 65 70 eb f3 3c 23 ea b6 17 6f 58 cd "
	"18 7d 84 76 cd df 6c 78 d4 89 2b 77 96 0b 88 13 "
	"52 0b 5b d2 b7 11 40 4e f2 3a 9f 59 fe ce b2 23 "
	"29 3f 7f 7a 91 0d 71 2d af bb 35 57 a5 03 53 3c "
	"a4 54 d2 b7 39 fe f4 8d 84 4b ce 49 11 9e 46 93 "
	"4c 48 3d 23 70 ae 01 fa 0b e5 87 48 d6 24 e0 0b "
	"f2 af 0e 3d 15 13 49 8b 9c 56 c4 f0 c9 83 b7 19";

/* 7.2 #13 C>S MESSAGE type 19 (160 bytes) */
static const char sec_f13[] =
	"8b 7b 21 10 0b dc e6 a7 b7 15 54 c4 be b8 8a d0 "
	"89 d7 b6 7e d4 17 2d 6b b4 5f 65 49 34 f8 51 9a "
	"48 7b 28 cc aa cd e1 d9 45 0e a5 84 6c 3a fd 18 "
	"4e 52 5a ba 37 74 69 d4 9a 52 f6 ca 60 d4 e8 3b "
	"44 5c 73 fd a3 5b 77 f9 42 09 da 83 49 02 4f 76 "
	"19 f9 b7 d3 a3 4b 65 8f 12 62 57 2a ca 36 dd 96 "
	"7d da 05 22 9b 21 9f 16 5c 28 8d cc 18 82 01 ba "
	"82 56 00 db f9 64 78 3b 86 47 e9 d9 71 93 fa fc "
	"6f 07 50 1e 44 75 35 d5 23 34 db 6f ff e1 2c bf "
	"84 a0 36 cd 79 0e 9c 59 f3 65 f0 91 30 eb 3b 71";

/* 7.2 #14 S>C MESSAGE (160 bytes) */
static const char sec_f14[] =
	"d1 8d 23 71 e4 15 81 67 70 e8 dd fe f1 e9 15 95 "
	"da a4 47 5f 1f 3d 38 a2 0e 87 dc c4 53 f0 eb 4b "
	"50 1b df 2c 7b 6c b8 c6 b6 e0 16 d1 28 b1 78 13 "
	"6b 10 f5 06 fb 1a 38 22 db 07 64 32 ec c6 08 f7 "
	"0e b5 33 0c d6 61 c6 2d d7 b5 3e 01 93 56 03 46 "
	"3d 8c b8 ee 94 de 89 58 6e bf db 0b e5 ac 1e f6 "
	"30 60 2b 40 65 01 61 e2 0b aa 89 be 1c d6 e8 f7 "
	"5c 2f e8 4a b5 29 a6 32 c5 6d be 65 84 fb 0e d1 "
	"40 88 59 62 aa 14 f6 de 8b ac c2 cc 89 5c 87 6c "
	"62 e3 fd 87 aa ee 4c 79 ee 0d 11 7e d0 fc 21 28";

/* msgr2.md 11: Banner (client, kernel-style required = 1): (26 bytes) */
static const char w_banner[] =
	"63 65 70 68 20 76 32 0a 10 00 01 00 00 00 00 00 "
	"00 00 01 00 00 00 00 00 00 00";

/* msgr2.md 11: HELLO (client → mon), 72 bytes: (72 bytes) */
static const char w_hello[] =
	"01 01 24 00 00 00 08 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 3f bd 6b 06 "
	"08 01 01 01 1c 00 00 00 02 00 00 00 00 00 00 00 "
	"10 00 00 00 02 00 0c e4 0a 00 00 01 00 00 00 00 "
	"00 00 00 00 f4 04 55 bc";

/* msgr2.md 11: AUTH_REQUEST (NONE, modes [1], "admin", global_id 0), 74 byt (74 bytes) */
static const char w_auth_req[] =
	"02 01 26 00 00 00 08 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 8c 5e e4 be "
	"01 00 00 00 01 00 00 00 01 00 00 00 16 00 00 00 "
	"0a 08 00 00 00 05 00 00 00 61 64 6d 69 6e 00 00 "
	"00 00 00 00 00 00 d8 ed e5 0c";

/* msgr2.md 11: AUTH_SIGNATURE (zeros), 68 bytes: (68 bytes) */
static const char w_auth_sig[] =
	"07 01 20 00 00 00 08 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 a8 0c 98 72 "
	"00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
	"55 c9 6e 75";

/* msgr2.md 11: cookie 0x0123456789abcdef), 159 bytes: (159 bytes) */
static const char w_client_ident[] =
	"08 01 7b 00 00 00 08 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 73 8a 98 95 "
	"02 01 00 00 00 01 01 01 1c 00 00 00 03 00 00 00 "
	"78 56 34 12 10 00 00 00 02 00 00 00 0a 00 00 02 "
	"00 00 00 00 00 00 00 00 01 01 01 1c 00 00 00 02 "
	"00 00 00 00 00 00 00 10 00 00 00 02 00 0c e4 0a "
	"00 00 01 00 00 00 00 00 00 00 00 8b 10 00 00 00 "
	"00 00 00 01 00 00 00 00 00 00 00 fe aa a4 7a b8 "
	"8e 01 2f 00 00 00 00 00 00 00 00 00 00 00 00 00 "
	"00 00 00 ef cd ab 89 67 45 23 01 45 71 2f 9e";

/* msgr2.md 11: 108 bytes — note num_segments = 2, seg1 alignment 8, epilogu (108 bytes) */
static const char w_msg_getver[] =
	"11 02 29 00 00 00 08 00 12 00 00 00 08 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 d1 01 2e 8f "
	"01 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 "
	"13 00 7f 00 01 00 00 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 18 e7 84 83 01 00 00 "
	"00 00 00 00 00 06 00 00 00 6f 73 64 6d 61 70 0e "
	"49 83 21 cf 00 00 00 00 00 00 00 00";

/* msgr2.md 11: MESSAGE MPing (seq 2, tid 0, type 2, empty front), 77 bytes  (77 bytes) */
static const char w_msg_ping[] =
	"11 01 29 00 00 00 08 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 00 00 00 af 96 04 f0 "
	"02 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
	"02 00 7f 00 01 00 00 00 00 00 00 00 00 00 00 00 "
	"00 00 00 00 00 00 00 00 00 79 0b cb d0";

/* ---- a client driven by hand ------------------------------------------------ */

struct script {
	struct pair *p;
	struct msgr2_conn *c;
	u8 tx[16384];
	size_t txn;
	int ret;
};

static void drain(struct script *sc)
{
	struct msgr2_iov iov[8];
	size_t moved;
	int i, n;

	for (;;) {
		n = msgr2_tx_iov(sc->c, iov, 8);
		if (n <= 0)
			return;
		moved = 0;
		for (i = 0; i < n; i++) {
			if (sc->txn + iov[i].len > sizeof(sc->tx))
				abort();
			memcpy(sc->tx + sc->txn, iov[i].base, iov[i].len);
			sc->txn += iov[i].len;
			moved += iov[i].len;
		}
		msgr2_tx_done(sc->c, moved);
	}
}

/* feed raw bytes to the client, draining what it sends */
static int feed(struct script *sc, const u8 *b, size_t len)
{
	size_t used;
	int ret, guard = 0;

	while (len) {
		drain(sc);
		ret = msgr2_rx_feed(sc->c, b, len, &used);
		if (ret)
			return sc->ret = ret;
		b += used;
		len -= used;
		if (!used && ++guard > 4)
			return sc->ret = -EIO;
	}
	drain(sc);
	return 0;
}

static size_t hex(const char *h, u8 *out)
{
	return pair_hex(h, out, 4096);
}

static int feed_hex(struct script *sc, const char *h)
{
	static u8 b[4096];

	return feed(sc, b, hex(h, b));
}

/* expected TX: the concatenation of @n hex strings */
static size_t concat(const char *const *h, int n, u8 *out)
{
	size_t len = 0;
	int i;

	for (i = 0; i < n; i++)
		len += hex(h[i], out + len);
	return len;
}

static struct script *script_new(u32 mode)
{
	struct script *sc = calloc(1, sizeof(*sc));

	if (!sc)
		abort();
	sc->p = pair_new(mode);
	return sc;
}

static void script_start(struct script *sc)
{
	if (pair_connect(sc->p))
		abort();
	sc->c = sc->p->cl.c;
	drain(sc);
}

static void script_free(struct script *sc)
{
	pair_free(sc->p);
	free(sc);
}

/* the 7.1 client: v2:127.0.0.1:3390/0, any:0.0.0.0:0/0x2343a824, "admin" */
static struct script *client_71(void)
{
	static const u8 mon_ip[4] = { 127, 0, 0, 1 };
	static const u8 zero[4];
	struct script *sc = script_new(MSGR2_MODE_CRC);
	struct msgr2_config *cfg = &sc->p->cl.cfg;

	msgr2_addr_ipv4(&cfg->target, MSGR2_ADDR_MSGR2, 0, mon_ip, 3390);
	msgr2_addr_ipv4(&cfg->my_addrs.a[0], MSGR2_ADDR_ANY, 0x2343a824,
			zero, 0);
	cfg->global_seq = 1;
	sc->p->cl.s.client_cookie = 0xe523149367cb2ab4ULL;
	return sc;
}

static struct msgr2_msg *getversion(u64 tid, u64 handle)
{
	u8 front[18];
	struct msgr2_msg *m;

	msgr2_put_le64(front, handle);
	msgr2_put_le32(front + 8, 6);
	memcpy(front + 12, "osdmap", 6);
	m = pair_msg_new(19, front, sizeof(front), NULL, 0, NULL, 0);
	m->hdr.tid = tid;
	return m;
}

/* @sc (a 7.1 client, config adjusted) fed up to SERVER_IDENT: READY, lossy */
static struct script *ready_from(struct script *sc)
{
	script_start(sc);
	feed_hex(sc, crc_f2);
	feed_hex(sc, crc_f4);
	feed_hex(sc, crc_f6);
	feed_hex(sc, crc_f8);
	feed_hex(sc, crc_f10);
	return sc;
}

static struct script *ready_71(void)
{
	return ready_from(client_71());
}

TEST(capture_crc_71)
{
	static const char *const c2s[] = {
		crc_f1, crc_f3, crc_f5, crc_f7, crc_f9, crc_f11
	};
	static u8 want[2048];
	struct script *sc = client_71();
	struct msgr2_session *s = &sc->p->cl.s;
	const struct msgr2_addr *view;
	struct pair_rx *r;
	size_t n;

	script_start(sc);
	ASSERT_EQ(0, msgr2_send(s, getversion(7, 0x7afeaa4cb8bd5595ULL)));
	ASSERT_EQ(0, feed_hex(sc, crc_f2));
	ASSERT_EQ(0, feed_hex(sc, crc_f4));
	view = msgr2_conn_peer_view(sc->c);
	EXPECT_EQ(MSGR2_ADDR_MSGR2, view->type);
	EXPECT_EQ(0x98, view->sa[2]);		/* port 39048 */
	EXPECT_EQ(0x88, view->sa[3]);
	ASSERT_EQ(0, feed_hex(sc, crc_f6));
	EXPECT_EQ(1, sc->p->cl.n_auth_done);
	EXPECT_EQ(4135, sc->p->cl.none.global_id);
	ASSERT_EQ(0, feed_hex(sc, crc_f8));
	ASSERT_EQ(0, feed_hex(sc, crc_f10));
	ASSERT_TRUE(msgr2_conn_ready(sc->c));
	EXPECT_TRUE(s->lossy);
	EXPECT_EQ(0, s->server_cookie);
	EXPECT_EQ(0, s->peer_gid);
	EXPECT_EQ(25, s->peer_global_seq);
	EXPECT_EQ(1, s->peer_addrs.n);
	EXPECT_EQ(0x3f01cfbdfffdffffULL & MSGR2_FEATURES_DEFAULT, s->features);
	EXPECT_EQ(1, sc->p->cl.n_tx_ok);	/* lossy: done once sent */
	ASSERT_EQ(0, feed_hex(sc, crc_f12));
	n = concat(c2s, 6, want);
	ASSERT_EQ(n, sc->txn);
	EXPECT_EQ(0, memcmp(want, sc->tx, n));
	ASSERT_EQ(1, sc->p->cl.n_rx);
	r = &sc->p->cl.rx[0];
	EXPECT_EQ(1, r->hdr.seq);
	EXPECT_EQ(7, r->hdr.tid);
	EXPECT_EQ(20, r->hdr.type);
	EXPECT_EQ(196, r->hdr.priority);
	EXPECT_EQ(2, r->hdr.version);
	EXPECT_EQ(2, r->hdr.compat_version);
	EXPECT_EQ(1, r->hdr.ack_seq);
	EXPECT_EQ(3, r->hdr.flags);
	ASSERT_EQ(24, r->len[0]);
	EXPECT_EQ(0, r->len[1]);
	EXPECT_EQ(0x7afeaa4cb8bd5595ULL, msgr2_get_le64(r->buf[0]));
	EXPECT_EQ(1, msgr2_get_le64(r->buf[0] + 8));
	EXPECT_EQ(1, msgr2_get_le64(r->buf[0] + 16));
	EXPECT_EQ(1, s->in_seq);
	script_free(sc);
}

TEST(worked_examples_11)
{
	static const char *const c2s[] = {
		w_banner, w_hello, w_auth_req, w_auth_sig, w_client_ident,
		w_msg_getver, w_msg_ping
	};
	static const u8 mon_ip[4] = { 10, 0, 0, 1 };
	static const u8 my_ip[4] = { 10, 0, 0, 2 };
	static u8 want[2048];
	struct pair *p = pair_new(MSGR2_MODE_CRC);
	struct msgr2_session *ss;
	struct msgr2_msg *m;
	size_t n;

	msgr2_addr_ipv4(&p->cl.cfg.target, MSGR2_ADDR_MSGR2, 0, mon_ip, 3300);
	msgr2_addr_ipv4(&p->cl.cfg.my_addrs.a[0], MSGR2_ADDR_ANY, 0x12345678,
			my_ip, 0);
	p->cl.s.client_cookie = 0x0123456789abcdefULL;
	msgr2_addr_ipv4(&p->sv.cfg.my_addrs.a[0], MSGR2_ADDR_MSGR2, 0, mon_ip,
			3300);
	p->sv.none.next_global_id = 4235;
	p->tap_cap[0] = 65536;
	p->tap[0] = malloc(p->tap_cap[0]);
	ASSERT_EQ(0, pair_connect(p));
	ASSERT_EQ(0, msgr2_send(&p->cl.s, getversion(1, 1)));
	m = pair_msg_new(2, NULL, 0, NULL, 0, NULL, 0);
	ASSERT_EQ(0, msgr2_send(&p->cl.s, m));
	pair_pump(p);
	ASSERT_TRUE(msgr2_conn_ready(p->cl.c));
	n = concat(c2s, 7, want);
	ASSERT_EQ(n, p->tap_len[0]);
	EXPECT_EQ(0, memcmp(want, p->tap[0], n));
	/* and the server decoded them */
	ss = pair_session(&p->sv);
	EXPECT_EQ(4235, ss->peer_gid);
	EXPECT_EQ(0x0123456789abcdefULL, ss->client_cookie);
	EXPECT_EQ(0x12345678, ss->peer_addrs.a[0].nonce);
	EXPECT_EQ(MSGR2_FEATURES_DEFAULT, ss->features);
	ASSERT_EQ(2, p->sv.n_rx);
	EXPECT_EQ(19, p->sv.rx[0].hdr.type);
	EXPECT_EQ(1, p->sv.rx[0].hdr.tid);
	EXPECT_EQ(127, p->sv.rx[0].hdr.priority);
	EXPECT_EQ(18, p->sv.rx[0].len[0]);
	EXPECT_EQ(0, memcmp(p->sv.rx[0].buf[0] + 12, "osdmap", 6));
	EXPECT_EQ(2, p->sv.rx[1].hdr.type);
	EXPECT_EQ(2, p->sv.rx[1].hdr.seq);
	EXPECT_EQ(0, p->sv.rx[1].len[0]);
	free(p->tap[0]);
	p->tap[0] = NULL;
	pair_free(p);
}

/* ---- 7.2: a replayed CephX client --------------------------------------------- */

static const char sec_key[] = "8eb2fac164d1f5ad7311dd59d3c465a5";
static const char sec_secret[] =
	"9330b85050e3261ac21c21e087d5da89e337db25d5fad53fed6b2645ab50af44"
	"8be45da7fa63f79d6c5a27606b13c07b69fc64b0b8e55c7735ef47fdabd9c5ad";

static int replay_request(void *priv, u8 *out, u32 cap)
{
	static u8 f[128];

	hex(sec_f5, f);
	memcpy(out, f + 48, 22);	/* AUTH_REQUEST's auth_payload */
	return 22;
}

static int replay_more(void *priv, const u8 *in, u32 len, u8 *out, u32 cap)
{
	static u8 f[128];

	if (len != 9 || in[0] != 1)
		return -EPROTO;
	hex(sec_f7, f);
	memcpy(out, f + 36, 36);	/* CephXAuthenticate, as captured */
	return 36;
}

static int replay_done(void *priv, u64 global_id, u32 con_mode,
		       const u8 *in, u32 len, struct msgr2_auth_result *res)
{
	memset(res, 0, sizeof(*res));
	res->global_id = global_id;
	res->session_key_len = 16;
	pair_hex(sec_key, res->session_key, 16);
	res->con_secret_len = 64;
	pair_hex(sec_secret, res->con_secret, 64);
	return len == 1011 ? 0 : -EPROTO;
}

static const struct msgr2_auth_ops replay_ops = {
	.method = MSGR2_AUTH_CEPHX,
	.request = replay_request,
	.reply_more = replay_more,
	.done = replay_done,
};

static struct script *client_72(void)
{
	static const u8 mon_ip[4] = { 127, 0, 0, 1 };
	static const u8 zero[4];
	struct script *sc = script_new(MSGR2_MODE_SECURE);
	struct msgr2_config *cfg = &sc->p->cl.cfg;

	msgr2_addr_ipv4(&cfg->target, MSGR2_ADDR_MSGR2, 0, mon_ip, 3391);
	msgr2_addr_ipv4(&cfg->my_addrs.a[0], MSGR2_ADDR_ANY, 0x03809b77,
			zero, 0);
	cfg->global_seq = 1;
	cfg->n_modes = 1;
	cfg->modes[0] = MSGR2_MODE_SECURE;
	cfg->auth[0] = &replay_ops;
	sc->p->cl.s.client_cookie = 0xe6e9eda3b7a2ff2cULL;
	return sc;
}

TEST(capture_secure_72)
{
	static const char *const c2s[] = {
		sec_f1, sec_f3, sec_f5, sec_f7, sec_f9, sec_f11, sec_f13
	};
	static u8 want[4096];
	struct script *sc = client_72();
	struct msgr2_session *s = &sc->p->cl.s;
	struct pair_rx *r;
	size_t n;

	script_start(sc);
	ASSERT_EQ(0, msgr2_send(s, getversion(7, 0x44373603136ea593ULL)));
	ASSERT_EQ(0, feed_hex(sc, sec_f2));
	ASSERT_EQ(0, feed_hex(sc, sec_f4));
	ASSERT_EQ(0, feed_hex(sc, sec_f6));
	ASSERT_EQ(0, feed_hex(sc, sec_f8));
	EXPECT_EQ(MSGR2_MODE_SECURE, msgr2_conn_mode(sc->c));
	ASSERT_EQ(0, feed_hex(sc, sec_f10));	/* HMAC of what we sent */
	ASSERT_EQ(0, feed_hex(sc, sec_f12));	/* 2 GCM ops */
	ASSERT_TRUE(msgr2_conn_ready(sc->c));
	EXPECT_TRUE(s->lossy);
	EXPECT_EQ(0x13, s->peer_global_seq);
	ASSERT_EQ(0, feed_hex(sc, sec_f14));
	n = concat(c2s, 7, want);
	ASSERT_EQ(n, sc->txn);
	EXPECT_EQ(0, memcmp(want, sc->tx, n));
	ASSERT_EQ(1, sc->p->cl.n_rx);
	r = &sc->p->cl.rx[0];
	EXPECT_EQ(20, r->hdr.type);
	EXPECT_EQ(7, r->hdr.tid);
	EXPECT_EQ(1, r->hdr.ack_seq);
	ASSERT_EQ(24, r->len[0]);
	EXPECT_EQ(0x44373603136ea593ULL, msgr2_get_le64(r->buf[0]));
	EXPECT_EQ(1, msgr2_get_le64(r->buf[0] + 8));
	EXPECT_EQ(1, msgr2_get_le64(r->buf[0] + 16));
	script_free(sc);
}

TEST(secure_flipped_tag)
{
	struct script *sc = client_72();
	static u8 f[256];
	size_t n;

	script_start(sc);
	feed_hex(sc, sec_f2);
	feed_hex(sc, sec_f4);
	feed_hex(sc, sec_f6);
	feed_hex(sc, sec_f8);
	n = hex(sec_f10, f);
	f[95] ^= 1;			/* last byte of the first tag */
	EXPECT_EQ(-EBADMSG, feed(sc, f, n));
	EXPECT_EQ(MSGR2_R_GCM_TAG, msgr2_conn_reason(sc->c));
	script_free(sc);
}

TEST(secure_sanity_vector_8)
{
	static const char vec[] =
		"5ee83e477793cc7cbb381480b30cc694 31dabdf879b50b483d403cfd1b1ec96a"
		"46c636fdd34ff7965036a3b4f02908ec d7f8cc4f2688a28ab01f761aeee6fdba"
		"01654a9d4a848c689172d4521fcf8108 f45a41cbf77b6366d5c34cf7ddc9fc0a";
	struct pair *p = pair_new(MSGR2_MODE_SECURE);
	u8 want[96];
	size_t i;
	bool found = false;

	/* no session key: a zero signature; secret 00..3f */
	p->cl.fixed.session_key_len = 0;
	p->sv.fixed.session_key_len = 0;
	p->tap_cap[0] = 65536;
	p->tap[0] = malloc(p->tap_cap[0]);
	pair_hex(vec, want, sizeof(want));
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(msgr2_conn_ready(p->cl.c));
	for (i = 0; i + 96 <= p->tap_len[0]; i++)
		if (!memcmp(p->tap[0] + i, want, 96))
			found = true;
	EXPECT_TRUE(found);
	free(p->tap[0]);
	p->tap[0] = NULL;
	pair_free(p);
}

/* ---- malformed input ---------------------------------------------------------- */

static void expect_reason(struct __test_metadata *_metadata,
			  struct script *sc, enum msgr2_reason r, int err)
{
	EXPECT_EQ(r, msgr2_conn_reason(sc->c));
	EXPECT_EQ(err, sc->ret);
	EXPECT_FALSE(msgr2_conn_ready(sc->c));
	/* failed stays failed */
	EXPECT_EQ(err, msgr2_rx_eof(sc->c));
}

#define EXPECT_REASON(sc, r, err) expect_reason(_metadata, sc, r, err)

static struct script *client_with(void (*edit)(u8 *f, size_t *n),
				  const char *frame_hex, bool ready)
{
	struct script *sc = ready ? ready_71() : client_71();
	static u8 f[4096];
	size_t n;

	if (!ready) {
		script_start(sc);
		feed_hex(sc, crc_f2);
	}
	n = hex(frame_hex, f);
	edit(f, &n);
	feed(sc, f, n);
	return sc;
}

static void flip_preamble_crc(u8 *f, size_t *n) { f[28] ^= 1; }
static void flip_seg_crc(u8 *f, size_t *n) { f[*n - 1] ^= 0x80; }
static void flip_epi_crc(u8 *f, size_t *n) { f[0x66] ^= 1; }
static void late_05(u8 *f, size_t *n) { f[0x65] = 0x05; }
static void truncate_half(u8 *f, size_t *n) { *n /= 2; }

TEST(bad_preamble_crc)
{
	struct script *sc = client_with(flip_preamble_crc, crc_f4, false);

	EXPECT_REASON(sc, MSGR2_R_PREAMBLE_CRC, -EBADMSG);
	script_free(sc);
}

TEST(bad_segment_crc)
{
	struct script *sc = client_with(flip_seg_crc, crc_f4, false);

	EXPECT_REASON(sc, MSGR2_R_SEGMENT_CRC, -EBADMSG);
	script_free(sc);
}

TEST(bad_epilogue_crc)
{
	struct script *sc = client_with(flip_epi_crc, crc_f12, true);

	EXPECT_REASON(sc, MSGR2_R_SEGMENT_CRC, -EBADMSG);
	EXPECT_EQ(0, sc->p->cl.n_rx);
	EXPECT_EQ(1, sc->p->cl.n_rx_drop);	/* buffers given back */
	script_free(sc);
}

TEST(late_status_05)
{
	struct script *sc = client_with(late_05, crc_f12, true);

	EXPECT_REASON(sc, MSGR2_R_LATE_STATUS, -EPROTO);
	script_free(sc);
}

TEST(aborted_frame_dropped)
{
	struct script *sc = ready_71();
	static u8 f[256];
	size_t n = hex(crc_f12, f);

	f[0x65] = 0x01;			/* ABORTED, crcs not checked */
	f[0x66] ^= 0xff;
	ASSERT_EQ(0, feed(sc, f, n));
	EXPECT_EQ(0, sc->p->cl.n_rx);
	EXPECT_EQ(1, sc->p->cl.n_rx_drop);
	EXPECT_EQ(0, sc->p->cl.s.in_seq);
	ASSERT_EQ(0, feed_hex(sc, crc_f12));
	EXPECT_EQ(1, sc->p->cl.n_rx);
	/* a duplicate is dropped, the connection stays */
	ASSERT_EQ(0, feed_hex(sc, crc_f12));
	EXPECT_EQ(1, sc->p->cl.n_rx);
	EXPECT_EQ(1, sc->p->cl.n_rx_dup);
	EXPECT_TRUE(msgr2_conn_ready(sc->c));
	script_free(sc);
}

/* A MESSAGE frame (front "abcdefgh") with @seq, late status @late. */
static size_t msg_frame(u8 *f, size_t cap, u64 seq, u8 late)
{
	static const u8 front[8] = "abcdefgh";
	u8 hdr[41] = { 0 };
	const void *s[4] = { hdr, front };
	const u32 len[4] = { sizeof(hdr), sizeof(front) };

	msgr2_put_le64(hdr, seq);		/* seq */
	msgr2_put_le16(hdr + 16, 19);		/* type */
	msgr2_put_le16(hdr + 18, 127);		/* priority */
	msgr2_put_le16(hdr + 20, 1);		/* version */
	msgr2_put_le16(hdr + 37, 1);		/* compat_version */
	return pair_frame_crc(f, cap, MSGR2_TAG_MESSAGE, 2, s, len, late);
}

TEST(aborted_frame_uses_up_its_seq)
{
	struct script *sc = ready_71();
	static u8 f[256];
	size_t n;

	sc->p->cl.s.lossy = false;
	n = msg_frame(f, sizeof(f), 1, 0x0e);
	ASSERT_EQ(0, feed(sc, f, n));
	EXPECT_EQ(1, sc->p->cl.n_rx);
	/* seq 2 aborted by its sender: dropped, and its seq is gone */
	n = msg_frame(f, sizeof(f), 2, 0x01);
	ASSERT_EQ(0, feed(sc, f, n));
	EXPECT_EQ(1, sc->p->cl.n_rx_drop);
	EXPECT_EQ(1, sc->p->cl.s.in_seq);
	n = msg_frame(f, sizeof(f), 3, 0x0e);
	ASSERT_EQ(0, feed(sc, f, n));
	EXPECT_EQ(2, sc->p->cl.n_rx);
	EXPECT_EQ(3, sc->p->cl.s.in_seq);
	EXPECT_TRUE(msgr2_conn_ready(sc->c));
	/* a gap with no abort before it: taken as well, as Ceph takes it */
	n = msg_frame(f, sizeof(f), 5, 0x0e);
	ASSERT_EQ(0, feed(sc, f, n));
	EXPECT_EQ(3, sc->p->cl.n_rx);
	EXPECT_EQ(5, sc->p->cl.s.in_seq);
	EXPECT_TRUE(msgr2_conn_ready(sc->c));
	script_free(sc);
}

/*
 * The seq an aborted MESSAGE used up stays allowed on the session's next
 * connection: its sender does not send it again there either.
 */
TEST(aborted_seq_allowed_after_reconnect)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);
	struct msgr2_session *sv;
	static u8 f[256];
	u8 b[4] = { 0 };
	size_t n;

	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	sv = pair_session(&p->sv);
	ASSERT_TRUE(msgr2_conn_ready(p->cl.c));
	ASSERT_FALSE(p->cl.s.lossy);
	ASSERT_EQ(0, pair_send(&p->sv, 1, b, sizeof(b), NULL, 0, NULL, 0));
	pair_pump(p);
	ASSERT_EQ(1, p->cl.n_rx);
	ASSERT_EQ(1, p->cl.s.in_seq);
	/* the server's seq 2, revoked half-way: sent aborted */
	n = msg_frame(f, sizeof(f), 2, 0x01);
	ASSERT_EQ(0, msgr2_rx_feed(p->cl.c, f, n, NULL));
	EXPECT_EQ(1, p->cl.n_rx_drop);
	sv->out_seq = 2;
	/* the connection drops before the next one */
	pair_disconnect(p);
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(msgr2_conn_ready(p->cl.c));
	ASSERT_EQ(0, pair_send(&p->sv, 1, b, sizeof(b), NULL, 0, NULL, 0));
	pair_pump(p);
	EXPECT_EQ(MSGR2_R_NONE, msgr2_conn_reason(p->cl.c));
	EXPECT_EQ(2, p->cl.n_rx);
	EXPECT_EQ(3, p->cl.s.in_seq);
	pair_free(p);
}

TEST(truncated_frame)
{
	struct script *sc = client_with(truncate_half, crc_f4, false);

	EXPECT_EQ(0, sc->ret);
	EXPECT_EQ(-ECONNRESET, msgr2_rx_eof(sc->c));
	EXPECT_EQ(MSGR2_R_EOF, msgr2_conn_reason(sc->c));
	script_free(sc);
}

static int frame_to(struct script *sc, u8 tag, int nsegs, const u32 *len)
{
	static u8 seg[4][64], f[512];
	const void *s[4] = { seg[0], seg[1], seg[2], seg[3] };
	size_t n = pair_frame_crc(f, sizeof(f), tag, nsegs, s, len,
				  0x0e);

	return feed(sc, f, n);
}

TEST(unknown_tag)
{
	static const u32 len[4] = { 8 };
	struct script *sc = ready_71();

	EXPECT_EQ(-EPROTO, frame_to(sc, 21, 1, len));
	EXPECT_REASON(sc, MSGR2_R_UNKNOWN_TAG, -EPROTO);
	script_free(sc);
	sc = ready_71();
	EXPECT_EQ(-EPROTO, frame_to(sc, 0, 1, len));
	EXPECT_EQ(MSGR2_R_UNKNOWN_TAG, msgr2_conn_reason(sc->c));
	script_free(sc);
}

TEST(segment_counts)
{
	static const u32 len[4] = { 41, 8, 8, 8 };
	static const u32 empty_last[4] = { 41, 0 };
	struct script *sc = ready_71();

	EXPECT_EQ(-EPROTO, frame_to(sc, MSGR2_TAG_MESSAGE, 0, len));
	EXPECT_EQ(MSGR2_R_MALFORMED, msgr2_conn_reason(sc->c));
	script_free(sc);
	sc = ready_71();
	EXPECT_EQ(-EPROTO, frame_to(sc, MSGR2_TAG_MESSAGE, 5, len));
	EXPECT_EQ(MSGR2_R_MALFORMED, msgr2_conn_reason(sc->c));
	script_free(sc);
	sc = ready_71();
	EXPECT_EQ(-EPROTO, frame_to(sc, MSGR2_TAG_MESSAGE, 2, empty_last));
	EXPECT_EQ(MSGR2_R_MALFORMED, msgr2_conn_reason(sc->c));
	script_free(sc);
	/* a control frame has exactly one segment */
	sc = ready_71();
	EXPECT_EQ(-EPROTO, frame_to(sc, MSGR2_TAG_ACK, 2, len));
	EXPECT_EQ(MSGR2_R_MALFORMED, msgr2_conn_reason(sc->c));
	script_free(sc);
	/* the header segment is exactly 41 bytes */
	sc = ready_71();
	EXPECT_EQ(-EPROTO, frame_to(sc, MSGR2_TAG_MESSAGE, 1, len + 1));
	EXPECT_EQ(MSGR2_R_MALFORMED, msgr2_conn_reason(sc->c));
	script_free(sc);
}

TEST(oversize)
{
	struct script *sc = client_71();
	static u8 f[256];
	size_t n;

	/* control segment above max_ctrl_len */
	sc->p->cl.cfg.max_ctrl_len = 32;
	script_start(sc);
	feed_hex(sc, crc_f2);
	EXPECT_EQ(-EMSGSIZE, feed_hex(sc, crc_f4));
	EXPECT_EQ(MSGR2_R_OVERSIZE, msgr2_conn_reason(sc->c));
	script_free(sc);

	/* front above max_seg_len */
	sc = client_71();
	sc->p->cl.cfg.max_seg_len[MSGR2_FRONT] = 16;
	script_start(sc);
	feed_hex(sc, crc_f2);
	feed_hex(sc, crc_f4);
	feed_hex(sc, crc_f6);
	feed_hex(sc, crc_f8);
	feed_hex(sc, crc_f10);
	ASSERT_TRUE(msgr2_conn_ready(sc->c));
	n = hex(crc_f12, f);
	EXPECT_EQ(-EMSGSIZE, feed(sc, f, n));
	EXPECT_EQ(MSGR2_R_OVERSIZE, msgr2_conn_reason(sc->c));
	script_free(sc);

	/* a limit above MSGR2_CTRL_MAX is refused */
	sc = client_71();
	sc->p->cl.cfg.max_ctrl_len = MSGR2_CTRL_MAX + 1;
	EXPECT_EQ(-EINVAL, pair_connect(sc->p));
	script_free(sc);
}

static void banner_case(struct __test_metadata *_metadata, const char *b,
			enum msgr2_reason r)
{
	struct script *sc = client_71();
	static u8 f[64];
	size_t n = hex(b, f);

	script_start(sc);
	feed(sc, f, n);
	EXPECT_EQ(r, msgr2_conn_reason(sc->c));
	EXPECT_EQ(-EPROTO, sc->ret);
	script_free(sc);
}

TEST(banners)
{
	/* "ceph v3\n" */
	banner_case(_metadata, "63 65 70 68 20 76 33 0a 10 00 01 00 00 00 00 00"
		    "00 00 00 00 00 00 00 00 00 00", MSGR2_R_BANNER);
	/* msgr1: "ceph v027" + ... */
	banner_case(_metadata, "63 65 70 68 20 76 30 32 37 00 00 00 00 00",
		    MSGR2_R_BANNER);
	/* no REVISION_1 */
	banner_case(_metadata, "63 65 70 68 20 76 32 0a 10 00 00 00 00 00 00 00"
		    "00 00 00 00 00 00 00 00 00 00", MSGR2_R_BANNER_FEATURES);
	/* requires a bit we lack (0x81) */
	banner_case(_metadata, "63 65 70 68 20 76 32 0a 10 00 81 00 00 00 00 00"
		    "00 00 81 00 00 00 00 00 00 00", MSGR2_R_BANNER_FEATURES);
	/* payload too short */
	banner_case(_metadata, "63 65 70 68 20 76 32 0a 08 00 01 00 00 00 00 00"
		    "00 00", MSGR2_R_BANNER);
}

TEST(lossless_gap_and_duplicate)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);
	static u8 f[256];
	u8 hdr[41] = { 0 };
	const void *seg[4] = { hdr };
	u32 len[4] = { 41 };
	size_t n;

	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(msgr2_conn_ready(p->cl.c));
	msgr2_put_le64(hdr, 1);
	n = pair_frame_crc(f, sizeof(f), MSGR2_TAG_MESSAGE, 1, seg, len, 0);
	ASSERT_EQ(0, msgr2_rx_feed(p->cl.c, f, n, NULL));
	ASSERT_EQ(0, msgr2_rx_feed(p->cl.c, f, n, NULL));
	EXPECT_EQ(1, p->cl.n_rx);
	EXPECT_EQ(1, p->cl.n_rx_dup);
	/* a gap (seq 2 never came): taken, as Ceph's messenger takes it */
	msgr2_put_le64(hdr, 3);
	n = pair_frame_crc(f, sizeof(f), MSGR2_TAG_MESSAGE, 1, seg, len, 0);
	ASSERT_EQ(0, msgr2_rx_feed(p->cl.c, f, n, NULL));
	EXPECT_EQ(2, p->cl.n_rx);
	EXPECT_EQ(3, p->cl.s.in_seq);
	/* and seq 2, late, is a duplicate now */
	msgr2_put_le64(hdr, 2);
	n = pair_frame_crc(f, sizeof(f), MSGR2_TAG_MESSAGE, 1, seg, len, 0);
	ASSERT_EQ(0, msgr2_rx_feed(p->cl.c, f, n, NULL));
	EXPECT_EQ(2, p->cl.n_rx);
	EXPECT_EQ(2, p->cl.n_rx_dup);
	EXPECT_EQ(MSGR2_R_NONE, msgr2_conn_reason(p->cl.c));
	pair_free(p);
}

/* ---- MESSAGE segments: crcs, limits, receive buffers -------------------- */

#define MSG_HEAD_LEN	(32 + 41 + 4)	/* preamble, header, header crc */

/* Payload bytes: segment i of a test message starts at pat() + i. */
static const u8 *pat(void)
{
	static u8 b[MSGR2_CTRL_MAX + 64];
	static bool done;
	size_t i;

	if (!done) {
		for (i = 0; i < sizeof(b); i++)
			b[i] = (u8)(i * 7 + i / 251);
		done = true;
	}
	return b;
}

/*
 * Preamble, header (seq @seq, type 19) and header crc of a MESSAGE frame
 * with front, middle and data of len[0..2] bytes; trailing empty segments
 * are not counted.
 */
static size_t msg_head(u8 *f, u64 seq, const u32 len[3])
{
	const u32 l[4] = { 41, len[0], len[1], len[2] };
	u8 *h = f + 32;
	int i, nsegs = 1;

	memset(f, 0, MSG_HEAD_LEN);
	for (i = 1; i < 4; i++)
		if (l[i])
			nsegs = i + 1;
	f[0] = MSGR2_TAG_MESSAGE;
	f[1] = nsegs;
	for (i = 0; i < nsegs; i++) {
		msgr2_put_le32(f + 2 + 6 * i, l[i]);
		msgr2_put_le16(f + 6 + 6 * i, i == 3 ? 4096 : 8);
	}
	msgr2_put_le32(f + 28, msgr2_crc32c(0, f, 28));
	msgr2_put_le64(h, seq);
	msgr2_put_le16(h + 16, 19);		/* type */
	msgr2_put_le16(h + 18, 127);		/* priority */
	msgr2_put_le16(h + 20, 1);		/* version */
	msgr2_put_le16(h + 37, 1);		/* compat_version */
	msgr2_put_le32(h + 41, msgr2_crc32c(~0U, h, 41));
	return MSG_HEAD_LEN;
}

/* The whole frame: msg_head(), the segments, the epilogue with @late. */
static size_t msg_frame3(u8 *f, size_t cap, u64 seq, u8 late,
			 const u32 len[3])
{
	size_t n = msg_head(f, seq, len);
	int i, nsegs = f[1];

	if (n + len[0] + len[1] + len[2] + 13 > cap)
		abort();
	for (i = 0; i < 3; i++) {
		memcpy(f + n, pat() + i, len[i]);
		n += len[i];
	}
	if (nsegs == 1)
		return n;
	f[n] = late;
	for (i = 0; i < 3; i++)
		msgr2_put_le32(f + n + 1 + 4 * i, i + 1 < nsegs ?
			       msgr2_crc32c(~0U, pat() + i, len[i]) : 0);
	return n + 13;
}

/* @r holds front, middle and data of msg_frame3() with @len */
static bool msg_is(const struct pair_rx *r, const u32 len[3])
{
	int i;

	for (i = 0; i < 3; i++)
		if (r->len[i] != len[i] ||
		    (len[i] && memcmp(r->buf[i], pat() + i, len[i])))
			return false;
	return true;
}

/*
 * The MESSAGE header segment (ceph_msg_header2) has its own crc in rev1
 * crc mode: a corrupted header byte or header crc fails the connection
 * with SEGMENT_CRC before rx_alloc() is asked for buffers, and nothing is
 * delivered.
 */
TEST(msg_header_crc)
{
	static const size_t flip[] = {
		32 + 16,		/* the type */
		32 + 41,		/* first byte of the crc */
		32 + 44,		/* last byte of the crc */
	};
	static const u32 len[3] = { 8 };
	static u8 f[256];
	struct script *sc;
	size_t i, n;

	/* untouched, it is delivered */
	sc = ready_71();
	n = msg_frame3(f, sizeof(f), 1, 0x0e, len);
	ASSERT_EQ(0, feed(sc, f, n));
	ASSERT_EQ(1, sc->p->cl.n_rx);
	EXPECT_TRUE(msg_is(&sc->p->cl.rx[0], len));
	script_free(sc);

	for (i = 0; i < ARRAY_SIZE(flip); i++) {
		sc = ready_71();
		n = msg_frame3(f, sizeof(f), 1, 0x0e, len);
		f[flip[i]] ^= 0x20;
		EXPECT_EQ(-EBADMSG, feed(sc, f, n)) {
			TH_LOG("header byte %zu flipped", flip[i]);
		}
		EXPECT_REASON(sc, MSGR2_R_SEGMENT_CRC, -EBADMSG);
		EXPECT_EQ(0, sc->p->cl.n_rx_alloc);
		EXPECT_EQ(0, sc->p->cl.n_rx);
		script_free(sc);
	}
}

static void seg_crc_case(struct __test_metadata *_metadata,
			 const u32 len[3], size_t flip, const char *what)
{
	struct script *sc = ready_71();
	static u8 f[256];
	size_t n = msg_frame3(f, sizeof(f), 1, 0x0e, len);

	f[flip] ^= 0x10;
	EXPECT_EQ(-EBADMSG, feed(sc, f, n)) {
		TH_LOG("%s flipped", what);
	}
	EXPECT_REASON(sc, MSGR2_R_SEGMENT_CRC, -EBADMSG);
	EXPECT_EQ(0, sc->p->cl.n_rx);
	EXPECT_EQ(1, sc->p->cl.n_rx_alloc);
	EXPECT_EQ(1, sc->p->cl.n_rx_drop);	/* buffers given back */
	EXPECT_EQ(0, pair_rx_outstanding(&sc->p->cl));
	script_free(sc);
}

/*
 * Each payload segment has its own crc in the 13-byte epilogue and each
 * is checked: one flipped byte in front, middle or data, or in that
 * segment's epilogue crc, fails the connection with SEGMENT_CRC; nothing
 * is delivered and the buffers rx_alloc() gave come back.  A counted
 * empty middle segment's crc (0xffffffff) is checked as well.
 */
TEST(msg_segment_crcs)
{
	static const u32 len[3] = { 8, 16, 24 };
	static const u32 hole[3] = { 8, 0, 24 };
	const size_t epi = MSG_HEAD_LEN + 8 + 16 + 24;
	const size_t epi_hole = MSG_HEAD_LEN + 8 + 24;
	struct script *sc;
	static u8 f[256];
	size_t n;

	/* untouched, both are delivered */
	sc = ready_71();
	n = msg_frame3(f, sizeof(f), 1, 0x0e, len);
	ASSERT_EQ(0, feed(sc, f, n));
	n = msg_frame3(f, sizeof(f), 2, 0x0e, hole);
	ASSERT_EQ(0, feed(sc, f, n));
	ASSERT_EQ(2, sc->p->cl.n_rx);
	EXPECT_TRUE(msg_is(&sc->p->cl.rx[0], len));
	EXPECT_TRUE(msg_is(&sc->p->cl.rx[1], hole));
	script_free(sc);

	seg_crc_case(_metadata, len, MSG_HEAD_LEN + 3, "front byte");
	seg_crc_case(_metadata, len, MSG_HEAD_LEN + 8 + 5, "middle byte");
	seg_crc_case(_metadata, len, MSG_HEAD_LEN + 24 + 7, "data byte");
	seg_crc_case(_metadata, len, epi + 1, "front crc");
	seg_crc_case(_metadata, len, epi + 5 + 2, "middle crc");
	seg_crc_case(_metadata, len, epi + 9 + 3, "data crc");
	seg_crc_case(_metadata, hole, epi_hole + 5, "empty middle's crc");
}

static void secure_tamper_case(struct __test_metadata *_metadata,
			       size_t flip, bool allocated)
{
	struct pair *p = pair_new(MSGR2_MODE_SECURE);
	struct msgr2_iov iov[8];
	static u8 f[1024];
	size_t n = 0;
	int i, k;

	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(msgr2_conn_ready(p->cl.c));
	ASSERT_TRUE(msgr2_conn_ready(p->sv.c));
	ASSERT_EQ(MSGR2_MODE_SECURE, msgr2_conn_mode(p->cl.c));
	ASSERT_EQ(0, pair_send(&p->cl, 42, pat(), 20, pat() + 1, 20,
			       pat() + 2, 20));
	/* head (96), then 3 padded segments, epilogue and tag */
	k = msgr2_tx_iov(p->cl.c, iov, 8);
	for (i = 0; i < k; i++) {
		ASSERT_LE(n + iov[i].len, sizeof(f));
		memcpy(f + n, iov[i].base, iov[i].len);
		n += iov[i].len;
	}
	ASSERT_EQ(96 + 3 * 32 + 16 + 16, n);
	ASSERT_EQ(0, msgr2_tx_done(p->cl.c, n));
	f[flip] ^= 0x04;
	EXPECT_EQ(-EBADMSG, msgr2_rx_feed(p->sv.c, f, n, NULL)) {
		TH_LOG("ciphertext byte %zu flipped", flip);
	}
	EXPECT_EQ(MSGR2_R_GCM_TAG, msgr2_conn_reason(p->sv.c));
	EXPECT_EQ(0, p->sv.n_rx);
	EXPECT_EQ(allocated, p->sv.n_rx_alloc);
	EXPECT_EQ(0, pair_rx_outstanding(&p->sv));
	pair_free(p);
}

/*
 * Secure mode: the payload segments and the epilogue are one GCM message
 * after the head; one flipped ciphertext byte in front, middle, data,
 * epilogue or tag fails the connection with GCM_TAG, nothing is delivered
 * and the buffers come back.  A flipped byte in the head (the header) fails
 * before rx_alloc().
 */
TEST(secure_msg_tampered)
{
	secure_tamper_case(_metadata, 40, false);		/* header */
	secure_tamper_case(_metadata, 96 + 3, true);		/* front */
	secure_tamper_case(_metadata, 96 + 32 + 5, true);	/* middle */
	secure_tamper_case(_metadata, 96 + 64 + 7, true);	/* data */
	secure_tamper_case(_metadata, 96 + 96, true);		/* epilogue */
	secure_tamper_case(_metadata, 96 + 112 + 1, true);	/* tag */
}

/* tx_done() of an oversized message fails the connection, as it may */
static struct pair *fail_in_cb_pair;
static void (*fail_in_cb_orig)(void *priv, struct msgr2_msg *m, int status);

static void fail_in_cb_tx_done(void *priv, struct msgr2_msg *m, int status)
{
	if (status == -EMSGSIZE && fail_in_cb_pair->cl.c)
		msgr2_conn_fail(fail_in_cb_pair->cl.c, MSGR2_R_LOCAL);
	fail_in_cb_orig(priv, m, status);
}

/*
 * A message queued while disconnected that turns out too large is given
 * back with -EMSGSIZE at transmit; when that callback fails the
 * connection, msgr2_tx_iov() hands out nothing more (the message behind
 * it included): "once a connection has failed, every call returns the
 * same error" (msgr2.h).
 */
TEST(tx_stops_when_callback_fails)
{
	static u8 big[4096];
	struct msgr2_iov iov[8];
	struct pair *p = pair_new(MSGR2_MODE_CRC);
	int i;

	ASSERT_NE(NULL, p);
	fail_in_cb_pair = p;
	p->cl.cfg.max_seg_len[MSGR2_DATA] = 1024;
	fail_in_cb_orig = p->cl.ops.tx_done;
	p->cl.ops.tx_done = fail_in_cb_tx_done;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(msgr2_conn_ready(p->cl.c));
	pair_disconnect(p);
	/* no connection: the limits are checked at transmit */
	ASSERT_EQ(0, pair_send(&p->cl, 1, NULL, 0, NULL, 0, big, sizeof(big)));
	ASSERT_EQ(0, pair_send(&p->cl, 2, "x", 1, NULL, 0, NULL, 0));
	ASSERT_EQ(0, pair_connect(p));
	for (i = 0; i < 50 && !msgr2_conn_ready(p->cl.c); i++) {
		pair_move(p, true, 0);
		pair_move(p, false, 0);
	}
	ASSERT_TRUE(msgr2_conn_ready(p->cl.c));
	EXPECT_GT(0, msgr2_tx_iov(p->cl.c, iov, 8));
	EXPECT_EQ(MSGR2_R_LOCAL, msgr2_conn_reason(p->cl.c));
	pair_free(p);
}

/*
 * A ready lossless pair whose client wrote one message, the server read
 * it and acknowledged it, while the client's transport has reported all
 * but its last byte written.  NULL when that could not be set up.
 */
static struct pair *pair_ack_while_written(struct __test_metadata *_metadata)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);
	struct msgr2_iov iov[8];
	size_t len = 0, used;
	u8 wire[512];
	int i, n;

	if (!p)
		return NULL;
	if (pair_connect(p))
		goto fail;
	pair_pump(p);
	if (!msgr2_conn_ready(p->cl.c) || p->cl.s.lossy ||
	    pair_send(&p->cl, 9, "front", 5, NULL, 0, NULL, 0))
		goto fail;
	n = msgr2_tx_iov(p->cl.c, iov, 8);
	for (i = 0; i < n; i++) {
		if (len + iov[i].len > sizeof(wire))
			goto fail;
		memcpy(wire + len, iov[i].base, iov[i].len);
		len += iov[i].len;
	}
	/* the server gets it all; the client is told all but one byte */
	if (n <= 0 || msgr2_rx_feed(p->sv.c, wire, len, &used) ||
	    used != len || msgr2_tx_done(p->cl.c, len - 1))
		goto fail;
	EXPECT_EQ(1, p->sv.n_rx);
	/* the server's ACK reaches the client */
	pair_move(p, false, 0);
	EXPECT_EQ(1, p->cl.s.acked_seq);
	EXPECT_EQ(0, p->cl.n_tx_ok);
	return p;
fail:
	pair_free(p);
	return NULL;
}

/*
 * Lossless: the peer acknowledges a message whose last byte the
 * transport has not reported written yet.  It is not released then, but
 * as soon as that byte is reported, not at the next ACK.
 */
TEST(ack_of_the_message_being_written)
{
	struct pair *p = pair_ack_while_written(_metadata);

	ASSERT_NE(NULL, p);
	/* the last byte: the message is done */
	ASSERT_EQ(0, msgr2_tx_done(p->cl.c, 1));
	EXPECT_EQ(1, p->cl.n_tx_ok);
	EXPECT_EQ(NULL, p->cl.s.sent_head);
	pair_free(p);
}

/*
 * The same ack, then the connection fails before the last byte is
 * reported: the message is done (the peer has it), not failed by the
 * next connection's full reset, nor sent again there.
 */
TEST(ack_of_the_message_being_written_then_fault)
{
	struct pair *p = pair_ack_while_written(_metadata);

	ASSERT_NE(NULL, p);
	/* the fault: acknowledged, so done */
	pair_disconnect(p);
	EXPECT_EQ(1, p->cl.n_tx_ok);
	EXPECT_EQ(0, p->cl.n_tx_err);
	EXPECT_EQ(NULL, p->cl.s.sent_head);
	EXPECT_EQ(NULL, p->cl.s.out_head);
	/* a server that forgot the session: its full reset fails nothing */
	p->cl.s.client_cookie ^= 0x5555;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(msgr2_conn_ready(p->cl.c));
	EXPECT_EQ(1, p->cl.n_reset);
	EXPECT_EQ(1, p->cl.n_tx_ok);
	EXPECT_EQ(0, p->cl.n_tx_err);
	EXPECT_EQ(1, p->sv.n_rx) TH_LOG("delivered twice");
	pair_free(p);
}

/*
 * The Linux client's revoke of a message it wrote and that was not yet
 * acked (ceph_msg_revoke() on out_sent): after a fault the others are
 * resent with their own seqs and the revoked one's is never seen.  The
 * server takes the gap, as Ceph's messenger does; it used to fail every
 * resume with a sequence gap until resume_timeout ended the session.
 */
TEST(revoked_sent_message_leaves_a_gap)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);
	struct msgr2_msg *m, **pp;
	struct msgr2_iov iov[16];
	size_t t;
	int i, k, n;

	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(msgr2_conn_ready(p->cl.c));
	ASSERT_FALSE(p->cl.s.lossy);
	ASSERT_EQ(0, pair_send(&p->cl, 1, "a", 1, NULL, 0, NULL, 0));
	pair_pump(p);
	ASSERT_EQ(1, p->sv.n_rx);
	/* seqs 2 and 3 go onto the wire and are lost with the connection */
	ASSERT_EQ(0, pair_send(&p->cl, 1, "b", 1, NULL, 0, NULL, 0));
	ASSERT_EQ(0, pair_send(&p->cl, 1, "c", 1, NULL, 0, NULL, 0));
	for (k = 0; k < 2; k++) {
		n = msgr2_tx_iov(p->cl.c, iov, 16);
		for (t = 0, i = 0; i < n; i++)
			t += iov[i].len;
		msgr2_tx_done(p->cl.c, t);
	}
	pair_disconnect(p);
	/* seq 2 revoked: unlinked from the client's queue */
	for (pp = &p->cl.s.out_head; *pp; pp = &(*pp)->next) {
		if ((*pp)->hdr.seq != 2)
			continue;
		m = *pp;
		*pp = m->next;
		if (p->cl.s.out_tail == m)
			p->cl.s.out_tail = NULL;
		break;
	}
	ASSERT_NE(NULL, p->cl.s.out_head);
	ASSERT_EQ(3, p->cl.s.out_head->hdr.seq);
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	EXPECT_TRUE(msgr2_conn_ready(p->sv.c));
	EXPECT_EQ(MSGR2_R_NONE, msgr2_conn_reason(p->sv.c));
	EXPECT_EQ(2, p->sv.n_rx);
	EXPECT_EQ(3, pair_session(&p->sv)->in_seq);
	pair_free(p);
}

/*
 * A secure connection with no tx scratch still sends a header-only
 * message (one segment: no tail to seal apart); a message with a front
 * is refused at msgr2_send() as before, never accepted then dropped.
 */
TEST(secure_no_scratch_header_only)
{
	struct pair *p = pair_new(MSGR2_MODE_SECURE);

	ASSERT_NE(NULL, p);
	p->cl.cfg.tx_scratch = NULL;
	p->cl.cfg.tx_scratch_len = 0;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(msgr2_conn_ready(p->cl.c));
	EXPECT_EQ(0, pair_send(&p->cl, 5, NULL, 0, NULL, 0, NULL, 0));
	EXPECT_EQ(-EMSGSIZE, pair_send(&p->cl, 6, "x", 1, NULL, 0, NULL, 0));
	pair_pump(p);
	EXPECT_EQ(1, p->sv.n_rx);
	EXPECT_EQ(0, p->cl.n_tx_err);
	pair_free(p);
}

/*
 * cfg.max_seg_len[] is inclusive and per segment: a MESSAGE whose front,
 * middle and data are each exactly at their limits is delivered; one byte
 * over in any one of them fails the connection with OVERSIZE at the
 * preamble, before rx_alloc().
 */
TEST(msg_seg_limits_exact)
{
	static const u32 max[3] = { 100, 200, 300 };
	static u8 f[1024];
	struct script *sc;
	u32 len[3];
	size_t n;
	int i;

	sc = client_71();
	memcpy(sc->p->cl.cfg.max_seg_len, max, sizeof(max));
	ready_from(sc);
	ASSERT_TRUE(msgr2_conn_ready(sc->c));
	n = msg_frame3(f, sizeof(f), 1, 0x0e, max);
	ASSERT_EQ(0, feed(sc, f, n));
	ASSERT_EQ(1, sc->p->cl.n_rx);
	EXPECT_TRUE(msg_is(&sc->p->cl.rx[0], max));
	script_free(sc);

	for (i = 0; i < 3; i++) {
		sc = client_71();
		memcpy(sc->p->cl.cfg.max_seg_len, max, sizeof(max));
		ready_from(sc);
		memcpy(len, max, sizeof(len));
		len[i]++;
		n = msg_frame3(f, sizeof(f), 1, 0x0e, len);
		EXPECT_EQ(-EMSGSIZE, feed(sc, f, n)) {
			TH_LOG("segment %d one over", i + 1);
		}
		EXPECT_REASON(sc, MSGR2_R_OVERSIZE, -EMSGSIZE);
		EXPECT_EQ(0, sc->p->cl.n_rx_alloc);
		script_free(sc);
	}
}

/*
 * The default limits (16 MiB front and middle, 64 MiB data) are inclusive
 * too: a MESSAGE head announcing exactly the limit is taken and rx_alloc()
 * asked for the buffers; one byte more fails with OVERSIZE before
 * rx_alloc().  (The payload is not sent: the release gives the buffers
 * back.)
 */
TEST(msg_seg_limits_default)
{
	static const u32 lim[3] = { 16U << 20, 16U << 20, 64U << 20 };
	struct script *sc;
	u8 f[MSG_HEAD_LEN];
	int i, over, ret;

	for (i = 0; i < 3; i++) {
		for (over = 0; over < 2; over++) {
			u32 len[3] = { 0 };

			len[i] = lim[i] + over;
			sc = ready_71();
			ret = feed(sc, f, msg_head(f, 1, len));
			if (over) {
				EXPECT_EQ(-EMSGSIZE, ret) {
					TH_LOG("segment %d one over", i + 1);
				}
				EXPECT_EQ(MSGR2_R_OVERSIZE,
					  msgr2_conn_reason(sc->c));
				EXPECT_EQ(0, sc->p->cl.n_rx_alloc);
			} else {
				EXPECT_EQ(0, ret) {
					TH_LOG("segment %d at limit", i + 1);
				}
				EXPECT_TRUE(msgr2_conn_ready(sc->c));
				EXPECT_EQ(1, sc->p->cl.n_rx_alloc);
			}
			script_free(sc);
		}
	}
}

/* A control frame to the client: tag @tag, @len pattern bytes. */
static int ctrl_to(struct script *sc, u8 tag, u32 len)
{
	static u8 f[MSGR2_CTRL_MAX + 64];
	const void *s[4] = { pat() };
	const u32 l[4] = { len };

	return feed(sc, f, pair_frame_crc(f, sizeof(f), tag, 1, s, l, 0));
}

/*
 * The control segment limit is inclusive: a KEEPALIVE2 whose segment is
 * exactly cfg.max_ctrl_len bytes (MSGR2_CTRL_MAX when 0) is taken and
 * answered with a KEEPALIVE2_ACK; one byte more fails with OVERSIZE.  A
 * configured limit of exactly MSGR2_CTRL_MAX is valid.
 */
TEST(ctrl_limit_exact)
{
	static const u32 cfg_lim[2] = { 128, 0 };
	static const u32 lim[2] = { 128, MSGR2_CTRL_MAX };
	struct script *sc;
	int i, over, ret;
	size_t txn;

	for (i = 0; i < 2; i++) {
		for (over = 0; over < 2; over++) {
			sc = client_71();
			sc->p->cl.cfg.max_ctrl_len = cfg_lim[i];
			ready_from(sc);
			ASSERT_TRUE(msgr2_conn_ready(sc->c));
			txn = sc->txn;
			ret = ctrl_to(sc, MSGR2_TAG_KEEPALIVE2, lim[i] + over);
			if (over) {
				EXPECT_EQ(-EMSGSIZE, ret) {
					TH_LOG("%u + 1 bytes", lim[i]);
				}
				EXPECT_REASON(sc, MSGR2_R_OVERSIZE, -EMSGSIZE);
			} else {
				EXPECT_EQ(0, ret) {
					TH_LOG("%u bytes", lim[i]);
				}
				ASSERT_EQ(32 + 8 + 4, sc->txn - txn);
				EXPECT_EQ(MSGR2_TAG_KEEPALIVE2_ACK,
					  sc->tx[txn]);
				EXPECT_EQ(0, memcmp(sc->tx + txn + 32, pat(),
						    8));
			}
			script_free(sc);
		}
	}
	sc = client_71();
	sc->p->cl.cfg.max_ctrl_len = MSGR2_CTRL_MAX;
	EXPECT_EQ(0, pair_connect(sc->p));
	script_free(sc);
}

/*
 * The peer's banner payload may be 16 (the two feature words) to
 * M2_BANNER_PAYLOAD_MAX (4096) bytes, extra bytes ignored: the handshake
 * goes on (the HELLO that follows is taken); 15 or 4097 fail with BANNER.
 */
TEST(banner_payload_limits)
{
	static const u32 len[] = { 15, 16, 4096, 4097 };
	static u8 b[10 + 4097];
	struct script *sc;
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(len); i++) {
		bool ok = len[i] >= 16 && len[i] <= 4096;

		sc = client_71();
		script_start(sc);
		memset(b, 0, sizeof(b));
		memcpy(b, "ceph v2\n", 8);
		msgr2_put_le16(b + 8, len[i]);
		b[10] = 1;			/* supported: REVISION_1 */
		ret = feed(sc, b, 10 + len[i]);
		if (ok) {
			EXPECT_EQ(0, ret) {
				TH_LOG("payload %u", len[i]);
			}
			EXPECT_EQ(0, feed_hex(sc, crc_f4));
			EXPECT_EQ(MSGR2_R_NONE, msgr2_conn_reason(sc->c));
		} else {
			EXPECT_EQ(-EPROTO, ret) {
				TH_LOG("payload %u", len[i]);
			}
			EXPECT_EQ(MSGR2_R_BANNER, msgr2_conn_reason(sc->c));
		}
		script_free(sc);
	}
}

/*
 * The pre-auth transcript keeps MSGR2_PREAUTH_MAX bytes per direction,
 * inclusive.  Received: banner, a HELLO padded with trailing bytes (its
 * decoder ignores them) and AUTH_DONE coming to exactly the limit complete
 * the handshake; one byte more fails with OVERSIZE.
 */
TEST(preauth_limit_rx)
{
	static u8 hello[MSGR2_CTRL_MAX], f[MSGR2_CTRL_MAX + 64], f4[128];
	const void *s[4] = { hello };
	struct script *sc;
	u32 l[4];
	int over, ret;

	hex(crc_f4, f4);
	for (over = 0; over < 2; over++) {
		/* banner 26 + HELLO 32 + l + 4 + AUTH_DONE 52 */
		l[0] = MSGR2_PREAUTH_MAX - 26 - 36 - 52 + over;
		memset(hello, 0, sizeof(hello));
		memcpy(hello, f4 + 32, 36);
		sc = client_71();
		script_start(sc);
		ASSERT_EQ(0, feed_hex(sc, crc_f2));
		ASSERT_EQ(0, feed(sc, f, pair_frame_crc(f, sizeof(f),
							MSGR2_TAG_HELLO, 1,
							s, l, 0)));
		ret = feed_hex(sc, crc_f6);
		if (over) {
			EXPECT_EQ(-EMSGSIZE, ret);
			EXPECT_REASON(sc, MSGR2_R_OVERSIZE, -EMSGSIZE);
		} else {
			EXPECT_EQ(0, ret);
			EXPECT_EQ(0, feed_hex(sc, crc_f8));
			EXPECT_EQ(0, feed_hex(sc, crc_f10));
			EXPECT_TRUE(msgr2_conn_ready(sc->c));
		}
		script_free(sc);
	}
}

static u32 pad_request_len;

static int pad_request(void *priv, u8 *out, u32 cap)
{
	if (cap < pad_request_len)
		return -ENOSPC;
	memset(out, 0, pad_request_len);
	return pad_request_len;
}

static int pad_done(void *priv, u64 global_id, u32 con_mode, const u8 *in,
		    u32 len, struct msgr2_auth_result *res)
{
	memset(res, 0, sizeof(*res));
	res->global_id = global_id;
	return 0;
}

/* AUTH_NONE's number, with an auth payload of pad_request_len bytes */
static const struct msgr2_auth_ops pad_ops = {
	.method = MSGR2_AUTH_NONE,
	.request = pad_request,
	.done = pad_done,
};

/*
 * Sent: banner, HELLO and an AUTH_REQUEST padded by its auth method to
 * exactly MSGR2_PREAUTH_MAX bytes complete the handshake; one byte more
 * fails with OVERSIZE when the AUTH_REQUEST is built.
 */
TEST(preauth_limit_tx)
{
	struct script *sc;
	int over, ret;

	for (over = 0; over < 2; over++) {
		/* banner 26 + HELLO 72 + AUTH_REQUEST 32 + 16 + pad + 4 */
		pad_request_len = MSGR2_PREAUTH_MAX - 26 - 72 - 52 + over;
		sc = client_71();
		sc->p->cl.cfg.auth[0] = &pad_ops;
		script_start(sc);
		ASSERT_EQ(0, feed_hex(sc, crc_f2));
		ret = feed_hex(sc, crc_f4);
		if (over) {
			EXPECT_EQ(-EMSGSIZE, ret);
			EXPECT_REASON(sc, MSGR2_R_OVERSIZE, -EMSGSIZE);
		} else {
			EXPECT_EQ(0, ret);
			EXPECT_EQ(MSGR2_PREAUTH_MAX, sc->txn);
			EXPECT_EQ(0, feed_hex(sc, crc_f6));
			EXPECT_EQ(0, feed_hex(sc, crc_f8));
			EXPECT_EQ(0, feed_hex(sc, crc_f10));
			EXPECT_TRUE(msgr2_conn_ready(sc->c));
		}
		script_free(sc);
	}
}

/*
 * Decoded u32 vectors hold at most M2_MAX_VEC (16) entries: an
 * AUTH_BAD_METHOD listing 16 allowed methods is taken (the client goes on
 * with its second method, AUTH_NONE); 17 fail with MALFORMED.
 */
TEST(vec_limit)
{
	static u8 pl[128], f[256];
	const void *s[4] = { pl };
	struct script *sc;
	u32 l[4], n, i;
	size_t txn;
	int ret;

	for (n = 16; n <= 17; n++) {
		sc = client_71();
		sc->p->cl.cfg.n_auth = 2;
		sc->p->cl.cfg.auth[0] = &pair_auth_fixed_ops;
		sc->p->cl.cfg.auth_priv[0] = &sc->p->cl.fixed;
		sc->p->cl.cfg.auth[1] = &msgr2_auth_none_ops;
		sc->p->cl.cfg.auth_priv[1] = &sc->p->cl.none;
		script_start(sc);
		ASSERT_EQ(0, feed_hex(sc, crc_f2));
		ASSERT_EQ(0, feed_hex(sc, crc_f4));
		msgr2_put_le32(pl, PAIR_AUTH_FIXED);	/* method */
		msgr2_put_le32(pl + 4, (u32)-EOPNOTSUPP);
		msgr2_put_le32(pl + 8, n);		/* allowed methods */
		for (i = 0; i < n; i++)
			msgr2_put_le32(pl + 12 + 4 * i, MSGR2_AUTH_NONE);
		l[0] = 12 + 4 * n;
		msgr2_put_le32(pl + l[0], 1);		/* allowed modes */
		msgr2_put_le32(pl + l[0] + 4, MSGR2_MODE_CRC);
		l[0] += 8;
		txn = sc->txn;
		ret = feed(sc, f, pair_frame_crc(f, sizeof(f),
						 MSGR2_TAG_AUTH_BAD_METHOD, 1,
						 s, l, 0));
		if (n > 16) {
			EXPECT_EQ(-EPROTO, ret);
			EXPECT_REASON(sc, MSGR2_R_MALFORMED, -EPROTO);
		} else {
			EXPECT_EQ(0, ret);
			ASSERT_GT(sc->txn, txn);
			EXPECT_EQ(MSGR2_TAG_AUTH_REQUEST, sc->tx[txn]);
			EXPECT_EQ(MSGR2_AUTH_NONE,
				  msgr2_get_le32(sc->tx + txn + 32));
		}
		script_free(sc);
	}
}

/*
 * Decoded address vectors hold at most M2_MAX_ADDRVEC (64) entries: a
 * SERVER_IDENT with 64 addresses, the one dialled last (beyond the
 * MSGR2_MAX_ADDRS kept, still found), makes the client READY; 65 fail
 * with MALFORMED.
 */
TEST(addrvec_limit)
{
	static u8 f10[256], pl[4096], f[4200];
	const void *s[4] = { pl };
	struct script *sc;
	u32 l[4], n, i;
	int ret;

	hex(crc_f10, f10);
	for (n = 64; n <= 65; n++) {
		/* crc_f10's payload: addrvec of 1 (40 bytes), 48 more */
		pl[0] = 2;
		msgr2_put_le32(pl + 1, n);
		for (i = 0; i < n; i++) {
			memcpy(pl + 5 + 35 * i, f10 + 37, 35);
			if (i < n - 1)
				pl[5 + 35 * i + 11] = i + 1;	/* nonce */
		}
		memcpy(pl + 5 + 35 * n, f10 + 72, 48);
		l[0] = 5 + 35 * n + 48;
		sc = client_71();
		script_start(sc);
		feed_hex(sc, crc_f2);
		feed_hex(sc, crc_f4);
		feed_hex(sc, crc_f6);
		ASSERT_EQ(0, feed_hex(sc, crc_f8));
		ret = feed(sc, f, pair_frame_crc(f, sizeof(f),
						 MSGR2_TAG_SERVER_IDENT, 1,
						 s, l, 0));
		if (n > 64) {
			EXPECT_EQ(-EPROTO, ret);
			EXPECT_REASON(sc, MSGR2_R_MALFORMED, -EPROTO);
		} else {
			EXPECT_EQ(0, ret);
			EXPECT_TRUE(msgr2_conn_ready(sc->c));
			EXPECT_EQ(MSGR2_MAX_ADDRS, sc->p->cl.s.peer_addrs.n);
		}
		script_free(sc);
	}
}

/*
 * A client answers at most M2_MAX_AUTH_ROUNDS (16) AUTH_REPLY_MOREs per
 * AUTH_REQUEST: the 16th is answered with AUTH_REQUEST_MORE, the 17th
 * fails with AUTH.
 */
TEST(auth_rounds_limit_client)
{
	static const u8 more[12] = { 8, 0, 0, 0, 'c', 'h', 'a', 'l', 'l' };
	const void *s[4] = { more };
	const u32 l[4] = { sizeof(more) };
	struct script *sc = client_71();
	static u8 f[64];
	size_t n, txn;
	int i;

	sc->p->cl.cfg.auth[0] = &pair_auth_fixed_ops;
	sc->p->cl.cfg.auth_priv[0] = &sc->p->cl.fixed;
	script_start(sc);
	ASSERT_EQ(0, feed_hex(sc, crc_f2));
	ASSERT_EQ(0, feed_hex(sc, crc_f4));
	n = pair_frame_crc(f, sizeof(f), MSGR2_TAG_AUTH_REPLY_MORE, 1, s, l,
			   0);
	for (i = 1; i <= 16; i++) {
		txn = sc->txn;
		ASSERT_EQ(0, feed(sc, f, n)) {
			TH_LOG("round %d", i);
		}
		ASSERT_GT(sc->txn, txn);
		EXPECT_EQ(MSGR2_TAG_AUTH_REQUEST_MORE, sc->tx[txn]);
	}
	EXPECT_EQ(-EACCES, feed(sc, f, n));
	EXPECT_REASON(sc, MSGR2_R_AUTH, -EACCES);
	script_free(sc);
}

/*
 * A client takes at most M2_MAX_RETRIES (16) SESSION_RETRYs: each of the
 * first 16 is answered with a new SESSION_RECONNECT, the 17th fails with
 * PEER.
 */
TEST(session_retry_limit)
{
	static u8 b[8], f[64];
	const void *s[4] = { b };
	const u32 l[4] = { sizeof(b) };
	struct script *sc = client_71();
	size_t n, txn;
	int i;

	sc->p->cl.s.server_cookie = 77;		/* resume: SESSION_RECONNECT */
	script_start(sc);
	feed_hex(sc, crc_f2);
	feed_hex(sc, crc_f4);
	feed_hex(sc, crc_f6);
	ASSERT_EQ(0, feed_hex(sc, crc_f8));
	for (i = 1; i <= 16; i++) {
		msgr2_put_le64(b, i);
		n = pair_frame_crc(f, sizeof(f), MSGR2_TAG_SESSION_RETRY, 1,
				   s, l, 0);
		txn = sc->txn;
		ASSERT_EQ(0, feed(sc, f, n)) {
			TH_LOG("retry %d", i);
		}
		ASSERT_GT(sc->txn, txn);
		EXPECT_EQ(MSGR2_TAG_SESSION_RECONNECT, sc->tx[txn]);
	}
	msgr2_put_le64(b, 17);
	n = pair_frame_crc(f, sizeof(f), MSGR2_TAG_SESSION_RETRY, 1, s, l, 0);
	EXPECT_EQ(-EPROTO, feed(sc, f, n));
	EXPECT_REASON(sc, MSGR2_R_PEER, -EPROTO);
	script_free(sc);
}

/*
 * Without a session key (AUTH_NONE) the peer's AUTH_SIGNATURE must be 32
 * zero bytes, in crc mode as in secure mode: any other value fails with
 * SIGNATURE.
 */
TEST(auth_none_signature_nonzero)
{
	struct script *sc = client_71();
	static u8 f[128];
	size_t n;

	script_start(sc);
	feed_hex(sc, crc_f2);
	feed_hex(sc, crc_f4);
	ASSERT_EQ(0, feed_hex(sc, crc_f6));
	n = hex(crc_f8, f);
	f[32 + 5] = 1;
	msgr2_put_le32(f + 64, msgr2_crc32c(~0U, f + 32, 32));
	EXPECT_EQ(-EACCES, feed(sc, f, n));
	EXPECT_REASON(sc, MSGR2_R_SIGNATURE, -EACCES);
	script_free(sc);
}

/*
 * Receive buffers always come back, once.  An aborted MESSAGE (late
 * status ABORTED) gives what rx_alloc() handed out back through rx_msg()
 * with -ECANCELED whatever its segments, an errno no failure has (kmsgr
 * frees an aborted frame's buffers at once, but a failed connection's
 * only once its transport is closed); so does a message cut by a
 * release (-ECONNRESET) or by a failure (the connection's errno: a local
 * one's is -ECONNABORTED); a message still waiting for rx_alloc() has
 * nothing to give back.
 */
TEST(rx_buffers_given_back)
{
	static const u32 lens[][3] = {
		{ 8 }, { 0, 8 }, { 0, 0, 8 }, { 8, 16, 24 }, { 1, 0, 4096 },
	};
	static u8 f[8192];
	struct pair_end *e;
	struct script *sc;
	size_t i, n, used;

	sc = ready_71();
	e = &sc->p->cl;
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		n = msg_frame3(f, sizeof(f), 1, 0x01, lens[i]);
		ASSERT_EQ(0, feed(sc, f, n));
		EXPECT_EQ(i + 1, e->n_rx_alloc);
		EXPECT_EQ(i + 1, e->n_rx_drop);
		EXPECT_EQ(-ECANCELED, e->rx_last_status);
		EXPECT_EQ(0, pair_rx_outstanding(e));
	}
	EXPECT_EQ(0, e->n_rx);
	/* the seq is still free */
	n = msg_frame3(f, sizeof(f), 1, 0x0e, lens[3]);
	ASSERT_EQ(0, feed(sc, f, n));
	ASSERT_EQ(1, e->n_rx);
	EXPECT_TRUE(msg_is(&e->rx[0], lens[3]));
	/* released in the middle of an aborted frame's payload */
	n = msg_frame3(f, sizeof(f), 2, 0x01, lens[3]);
	ASSERT_EQ(0, feed(sc, f, n - 20));
	EXPECT_EQ(1, pair_rx_outstanding(e));
	pair_disconnect(sc->p);
	EXPECT_EQ(0, pair_rx_outstanding(e));
	EXPECT_EQ(-ECONNRESET, e->rx_last_status);
	EXPECT_EQ(0, e->n_rx_unpaired);
	script_free(sc);

	/* a bad late status fails the connection: buffers back too */
	sc = ready_71();
	e = &sc->p->cl;
	n = msg_frame3(f, sizeof(f), 1, 0x05, lens[3]);
	EXPECT_EQ(-EPROTO, feed(sc, f, n));
	EXPECT_EQ(MSGR2_R_LATE_STATUS, msgr2_conn_reason(sc->c));
	EXPECT_EQ(1, e->n_rx_alloc);
	EXPECT_EQ(0, pair_rx_outstanding(e));
	EXPECT_EQ(-EPROTO, e->rx_last_status);
	script_free(sc);

	/* failed locally in the middle of a payload: the local errno */
	sc = ready_71();
	e = &sc->p->cl;
	n = msg_frame3(f, sizeof(f), 1, 0x0e, lens[3]);
	ASSERT_EQ(0, feed(sc, f, n - 20));
	EXPECT_EQ(1, pair_rx_outstanding(e));
	msgr2_conn_fail(sc->c, MSGR2_R_LOCAL);
	EXPECT_EQ(0, pair_rx_outstanding(e));
	EXPECT_EQ(-ECONNABORTED, e->rx_last_status);
	script_free(sc);

	/* no room yet: nothing handed out, nothing given back */
	sc = ready_71();
	e = &sc->p->cl;
	e->rx_eagain = 100;
	n = msg_frame3(f, sizeof(f), 1, 0x01, lens[3]);
	EXPECT_EQ(0, msgr2_rx_feed(sc->c, f, n, &used));
	EXPECT_EQ(MSG_HEAD_LEN, used);
	EXPECT_GE(e->n_eagain, 1);
	pair_disconnect(sc->p);
	EXPECT_EQ(0, e->n_rx_alloc);
	EXPECT_EQ(0, e->n_rx_back);
	script_free(sc);
}

/*
 * msgr2_tx_more(): true while frames are queued behind the pieces
 * msgr2_tx_iov() returned (another message, or pieces beyond its max),
 * false for the last frame and when nothing is queued; the transport holds
 * partial segments back on it (MSG_MORE), so a wrong true would stall a
 * message and a wrong false would cost a packet per message.
 */
TEST(tx_more_hint)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);
	struct msgr2_iov iov[8];
	size_t len;
	int i, k;

	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(msgr2_conn_ready(p->cl.c));
	EXPECT_FALSE(msgr2_tx_more(p->cl.c, 0));

	ASSERT_EQ(0, pair_send(&p->cl, 42, pat(), 20, NULL, 0, pat(), 64));
	ASSERT_EQ(0, pair_send(&p->cl, 43, pat(), 20, NULL, 0, NULL, 0));
	/* the first message, with the second behind it */
	k = msgr2_tx_iov(p->cl.c, iov, 8);
	ASSERT_GT(k, 0);
	EXPECT_TRUE(msgr2_tx_more(p->cl.c, k));
	/* only part of the first message's pieces offered */
	ASSERT_GT(k, 1);
	EXPECT_TRUE(msgr2_tx_more(p->cl.c, 1));
	ASSERT_EQ(1, msgr2_tx_iov(p->cl.c, iov, 1));
	EXPECT_TRUE(msgr2_tx_more(p->cl.c, 1));
	ASSERT_EQ(k, msgr2_tx_iov(p->cl.c, iov, 8));
	for (len = 0, i = 0; i < k; i++)
		len += iov[i].len;
	ASSERT_EQ(0, msgr2_tx_done(p->cl.c, len));
	/* the second, the last queued */
	k = msgr2_tx_iov(p->cl.c, iov, 8);
	ASSERT_GT(k, 0);
	EXPECT_FALSE(msgr2_tx_more(p->cl.c, k));
	for (len = 0, i = 0; i < k; i++)
		len += iov[i].len;
	ASSERT_EQ(0, msgr2_tx_done(p->cl.c, len));
	EXPECT_EQ(0, msgr2_tx_iov(p->cl.c, iov, 8));
	EXPECT_FALSE(msgr2_tx_more(p->cl.c, 0));
	pair_free(p);
}

TEST(reason_strings)
{
	int r;

	for (r = 0; r < MSGR2_R__MAX; r++)
		EXPECT_NE(0, strcmp("unknown", msgr2_reason_str(r)));
	EXPECT_STREQ("unknown", msgr2_reason_str(MSGR2_R__MAX));
}

TEST_HARNESS_MAIN
