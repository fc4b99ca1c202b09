export type { BenchSuite, SuiteOutcome } from './bench-suite';
export { machineInfo, type MachineInfo } from './machine';
