import type * as client from '@tool-dispatch/client';
import type * as shared from '@tool-dispatch/shared';
import { ERROR_CODES, STATUSES, type StopStatus } from '@tool-dispatch/shared';
import { describe, expect, expectTypeOf, it } from 'vitest';

// The client has no dependencies, so it spells the wire types (API.md) out again in
// packages/client/src/types.ts. These checks fail `pnpm typecheck` (tsc over test/) as soon as
// either copy changes alone, each stated both ways round. toEqualTypeOf alone takes `x?: T` and
// `x?: T | undefined` for equal; under exactOptionalPropertyTypes they are not, so toExtend too.
describe('the client and shared spell the wire types the same', () => {
  it('has the same Status', () => {
    expectTypeOf<client.Status>().toEqualTypeOf<shared.Status>();
    expectTypeOf<shared.Status>().toEqualTypeOf<client.Status>();
    expectTypeOf<client.Status>().toExtend<shared.Status>();
    expectTypeOf<shared.Status>().toExtend<client.Status>();
  });

  it('has the same ErrorCode (the client adds the coordinator rate_limited to the executor codes)', () => {
    type SharedCode = shared.ErrorCode | shared.AdmissionErrorCode;
    expectTypeOf<client.ErrorCode>().toEqualTypeOf<SharedCode>();
    expectTypeOf<SharedCode>().toEqualTypeOf<client.ErrorCode>();
    expectTypeOf<client.ErrorCode>().toExtend<SharedCode>();
    expectTypeOf<SharedCode>().toExtend<client.ErrorCode>();
  });

  it('has the same ResultError, its stop codes being the StopStatus values', () => {
    expectTypeOf<client.ResultError>().toEqualTypeOf<shared.ResultError>();
    expectTypeOf<shared.ResultError>().toEqualTypeOf<client.ResultError>();
    expectTypeOf<client.ResultError>().toExtend<shared.ResultError>();
    expectTypeOf<shared.ResultError>().toExtend<client.ResultError>();
    expectTypeOf<Exclude<client.ResultError['code'], client.ErrorCode>>().toEqualTypeOf<StopStatus>();
  });

  it('has the same CallResult', () => {
    expectTypeOf<client.CallResult>().toEqualTypeOf<shared.CallResult>();
    expectTypeOf<shared.CallResult>().toEqualTypeOf<client.CallResult>();
    expectTypeOf<client.CallResult>().toExtend<shared.CallResult>();
    expectTypeOf<shared.CallResult>().toExtend<client.CallResult>();
  });

  it('has the same ToolDefinition', () => {
    expectTypeOf<client.ToolDefinition>().toEqualTypeOf<shared.ToolDefinition>();
    expectTypeOf<shared.ToolDefinition>().toEqualTypeOf<client.ToolDefinition>();
    expectTypeOf<client.ToolDefinition>().toExtend<shared.ToolDefinition>();
    expectTypeOf<shared.ToolDefinition>().toExtend<client.ToolDefinition>();
  });

  it('has the same NeutralTool', () => {
    expectTypeOf<client.NeutralTool>().toEqualTypeOf<shared.NeutralTool>();
    expectTypeOf<shared.NeutralTool>().toEqualTypeOf<client.NeutralTool>();
    expectTypeOf<client.NeutralTool>().toExtend<shared.NeutralTool>();
    expectTypeOf<shared.NeutralTool>().toExtend<client.NeutralTool>();
  });

  it('has the same CallState (v1.3)', () => {
    expectTypeOf<client.CallState>().toEqualTypeOf<shared.CallState>();
    expectTypeOf<shared.CallState>().toEqualTypeOf<client.CallState>();
    expectTypeOf<client.CallState>().toExtend<shared.CallState>();
    expectTypeOf<shared.CallState>().toExtend<client.CallState>();
  });

  it('has the same RoundCallState (v1.3)', () => {
    expectTypeOf<client.RoundCallState>().toEqualTypeOf<shared.RoundCallState>();
    expectTypeOf<shared.RoundCallState>().toEqualTypeOf<client.RoundCallState>();
    expectTypeOf<client.RoundCallState>().toExtend<shared.RoundCallState>();
    expectTypeOf<shared.RoundCallState>().toExtend<client.RoundCallState>();
  });

  it('has the same RoundAccepted (v1.3)', () => {
    expectTypeOf<client.RoundAccepted>().toEqualTypeOf<shared.RoundAccepted>();
    expectTypeOf<shared.RoundAccepted>().toEqualTypeOf<client.RoundAccepted>();
    expectTypeOf<client.RoundAccepted>().toExtend<shared.RoundAccepted>();
    expectTypeOf<shared.RoundAccepted>().toExtend<client.RoundAccepted>();
  });

  it('has the same RoundRunning (v1.3)', () => {
    expectTypeOf<client.RoundRunning>().toEqualTypeOf<shared.RoundRunning>();
    expectTypeOf<shared.RoundRunning>().toEqualTypeOf<client.RoundRunning>();
    expectTypeOf<client.RoundRunning>().toExtend<shared.RoundRunning>();
    expectTypeOf<shared.RoundRunning>().toExtend<client.RoundRunning>();
  });

  // The run-time half: every client Status and ErrorCode (the records must list each one to
  // compile) is in shared's lists, and no more.
  it("lists the client's statuses and error codes in shared's STATUSES and ERROR_CODES", () => {
    const statuses = {
      ok: true,
      error: true,
      deduped: true,
      cached: true,
      schema: true,
      refused: true,
      unknown: true,
      invalid: true,
      denied: true,
    } satisfies Record<client.Status, true>;
    const codes = {
      handler_error: true,
      timeout: true,
      worker_lost: true,
      cancelled: true,
      unavailable: true,
      rate_limited: true,
      sandbox_unavailable: true,
      resource_limit: true,
    } satisfies Record<client.ErrorCode, true>;
    expect(Object.keys(statuses).sort()).toEqual([...STATUSES].sort());
    expect(Object.keys(codes).sort()).toEqual([...ERROR_CODES, 'rate_limited'].sort());
  });
});
