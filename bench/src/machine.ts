import os from 'node:os';

/** The machine a benchmark ran on, for its JSON report and README table. */
export interface MachineInfo {
  readonly cpuModel: string;
  readonly cores: number;
  readonly memoryBytes: number;
  readonly nodeVersion: string;
  readonly os: string;
  readonly arch: string;
  /** 1-minute load average when the run started: other work on the machine skews the figures. */
  readonly loadAverage1m: number;
}

export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryBytes: os.totalmem(),
    nodeVersion: process.version,
    os: `${os.type()} ${os.release()}`,
    arch: os.arch(),
    loadAverage1m: Math.round(os.loadavg()[0]! * 100) / 100,
  };
}
