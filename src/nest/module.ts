/**
 * `SluiceModule.forRoot(options)` / `forRootAsync(...)`: a global module providing
 * `SluiceLimits` and `SluiceGuard`, the problem-JSON exception filter, and (unless
 * `appGuard: false`) the guard on every route.
 */
import type { IncomingMessage } from "node:http";
import type { DynamicModule, FactoryProvider, ModuleMetadata, Provider } from "@nestjs/common";
import type { DiscoveryService, HttpAdapterHost, MetadataScanner } from "@nestjs/core";
import { RateLimitExceptionFilter } from "./exception.ts";
import { SluiceGuard } from "./guard.ts";
import { SluiceLimits } from "./limits.ts";
import type { SluiceModuleOptions } from "./options.ts";
import { nestCommonIfPresent, nestCore } from "./peers.ts";
import { checkRoutes } from "./route-check.ts";

/** Injection token of the module's options. */
export const SLUICE_OPTIONS = Symbol("sluice:options");
/** Token of the provider that checks every route's limit at bootstrap. */
const ROUTE_CHECK = Symbol("sluice:route-check");

/** Options of `SluiceModule.forRootAsync`: build the options from other providers (e.g. a Redis client). */
export interface SluiceModuleAsyncOptions<Req = IncomingMessage> extends Pick<ModuleMetadata, "imports"> {
  /** Returns the module options; gets the `inject` providers in order. */
  useFactory: (...args: never[]) => SluiceModuleOptions<Req> | Promise<SluiceModuleOptions<Req>>;
  /** Providers `useFactory` gets. */
  inject?: FactoryProvider["inject"];
  /** As in `forRoot` (decided here because providers are fixed before the factory runs); default true. */
  appGuard?: boolean;
}

/** The module's providers around the provider of `SluiceLimits`. */
function providers(limits: Provider, appGuard: boolean): Provider[] {
  const { APP_FILTER, APP_GUARD, DiscoveryService, HttpAdapterHost, MetadataScanner } = nestCore();
  const list: Provider[] = [
    limits,
    { provide: SluiceGuard, useFactory: (l: SluiceLimits) => new SluiceGuard(l), inject: [SluiceLimits] },
    {
      provide: ROUTE_CHECK,
      // After every module's onModuleInit, so rules a provider adds to the service then count.
      useFactory: (l: SluiceLimits, discovery: DiscoveryService, scanner: MetadataScanner) => ({
        onApplicationBootstrap: () => checkRoutes(l, discovery, scanner),
      }),
      inject: [SluiceLimits, DiscoveryService, MetadataScanner],
    },
    {
      provide: APP_FILTER,
      useFactory: (host: HttpAdapterHost) => new RateLimitExceptionFilter(host),
      inject: [HttpAdapterHost],
    },
  ];
  if (appGuard)
    list.push({ provide: APP_GUARD, useFactory: (l: SluiceLimits) => new SluiceGuard(l), inject: [SluiceLimits] });
  return list;
}

/** The sluice module for NestJS. */
// biome-ignore lint/complexity/noStaticOnlyClass: a Nest module is a class (forRoot returns it as `module`).
export class SluiceModule {
  /** The module with `options` (see `SluiceModuleOptions`). */
  static forRoot<Req = IncomingMessage>(options: SluiceModuleOptions<Req>): DynamicModule {
    // Validated now, so a bad option fails at import time rather than at bootstrap.
    const limits = new SluiceLimits(options as SluiceModuleOptions<never>);
    return {
      module: SluiceModule,
      imports: [nestCore().DiscoveryModule],
      providers: [
        { provide: SLUICE_OPTIONS, useValue: options },
        ...providers({ provide: SluiceLimits, useValue: limits }, options.appGuard !== false),
      ],
      exports: [SluiceLimits, SluiceGuard],
    };
  }

  /** The module with options built by `useFactory` from injected providers. */
  static forRootAsync<Req = IncomingMessage>(options: SluiceModuleAsyncOptions<Req>): DynamicModule {
    return {
      module: SluiceModule,
      imports: [nestCore().DiscoveryModule, ...(options.imports ?? [])],
      providers: [
        { provide: SLUICE_OPTIONS, useFactory: options.useFactory, inject: options.inject ?? [] },
        ...providers(
          {
            provide: SluiceLimits,
            useFactory: (o: SluiceModuleOptions<never>) => new SluiceLimits(o),
            inject: [SLUICE_OPTIONS],
          },
          options.appGuard !== false,
        ),
      ],
      exports: [SluiceLimits, SluiceGuard],
    };
  }
}

// Where Nest is not installed nothing can import the module; forRoot then names what is missing.
if (nestCommonIfPresent !== undefined) {
  nestCommonIfPresent.Global()(SluiceModule);
  nestCommonIfPresent.Module({})(SluiceModule);
}
