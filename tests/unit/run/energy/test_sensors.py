"""run/energy/sensors.py: each sensor's parser on the format's published examples, verbatim."""

from __future__ import annotations

import pytest

from orchestrator.run.energy.sensors import parse_hwmon, parse_pmic, parse_powerstats, parse_rapl

# `vcgencmd pmic_read_adc` on a Raspberry Pi 5 Model B Rev 1.0 (2 GB) under load, as published in the tests of
# ml-energy/zeus (a capture of the device's output); EXT5V_V and BATT_V are voltages without a current.
PI5_UNDER_LOAD = """ 3V7_WL_SW_A current(0)=0.09368929A
   3V3_SYS_A current(1)=0.08783370A
   1V8_SYS_A current(2)=0.18054710A
  DDR_VDD2_A current(3)=0.22543980A
  DDR_VDDQ_A current(4)=0.06666720A
   1V1_SYS_A current(5)=0.17566740A
    0V8_SW_A current(6)=0.37670900A
  VDD_CORE_A current(7)=6.22421000A
   3V3_DAC_A current(17)=0.00006105A
   3V3_ADC_A current(18)=0.00036630A
   0V8_AON_A current(16)=0.00305250A
      HDMI_A current(22)=0.02417580A
 3V7_WL_SW_V volt(8)=3.69977600V
   3V3_SYS_V volt(9)=3.31003300V
   1V8_SYS_V volt(10)=1.80512600V
  DDR_VDD2_V volt(11)=1.10476100V
  DDR_VDDQ_V volt(12)=0.60146460V
   1V1_SYS_V volt(13)=1.11025500V
    0V8_SW_V volt(14)=0.80146440V
  VDD_CORE_V volt(15)=0.86173300V
   3V3_DAC_V volt(20)=3.31318300V
   3V3_ADC_V volt(21)=3.30677300V
   0V8_AON_V volt(19)=0.80029220V
      HDMI_V volt(23)=5.08664000V
     EXT5V_V volt(24)=5.09066000V
      BATT_V volt(25)=0.00000000V
"""

# The head of the example in geerlingguy/sbc-reviews' Raspberry Pi 5 review (its own "..." cut the rest):
# currents only, so no rail has both figures yet.
PI5_README = """pi@pi5:~ $ vcgencmd pmic_read_adc
 3V7_WL_SW_A current(0)=0.00780744A
   3V3_SYS_A current(1)=0.12199130A
   1V8_SYS_A current(2)=0.24300660A
  DDR_VDD2_A current(3)=0.02147046A
  DDR_VDDQ_A current(4)=0.00000000A
   1V1_SYS_A current(5)=0.18640260A
   0V8_SYS_A current(6)=0.26935670A
  VDD_CORE_A current(7)=0.75012000A
   3V3_DAC_A current(17)=0.61050000A
...
"""

# androidx benchmark's PowerRailTest: "a mocked output of `dumpsys powerstats`" (Pixel 6 channel names), verbatim.
ANDROIDX_CHANNELS = """ChannelId: 10, ChannelName: S9S_VDD_AOC, ChannelSubsystem: AOC
PowerStatsService dumpsys: available Channels
ChannelId: 0, ChannelName: S10M_VDD_TPU, ChannelSubsystem: TPU
ChannelId: 1, ChannelName: VSYS_PWR_MODEM, ChannelSubsystem: Modem
ChannelId: 2, ChannelName: VSYS_PWR_RFFE, ChannelSubsystem: Cellular
ChannelId: 3, ChannelName: S2M_VDD_CPUCL2, ChannelSubsystem: CPU(BIG)
ChannelId: 4, ChannelName: S3M_VDD_CPUCL1, ChannelSubsystem: CPU(MID)"""

# Energy meter lines as PowerStatsService's EnergyMeasurementUtils.dumpsys prints them ("ChannelId: " + id +
# ", Timestamp (ms): " + timestampMs + ", Duration (ms): " + durationMs + ", Energy (uWs): " + energyUWs);
# the figures are ours.
METERS = """  ChannelId: 3, Timestamp (ms): 5000, Duration (ms): 5000, Energy (uWs): 2000000
  ChannelId: 4, Timestamp (ms): 5000, Duration (ms): 5000, Energy (uWs): 300000
  ChannelId: 3, Timestamp (ms): 9000, Duration (ms): 9000, Energy (uWs): 2600000
  ChannelId: 7, Timestamp (ms): 9000, Duration (ms): 9000, Energy (uWs): 42"""


def test_pmic_power_is_current_times_voltage_for_rails_with_both() -> None:
    reading = parse_pmic(PI5_UNDER_LOAD)
    assert len(reading.values) == 12 and "EXT5V" not in reading.values and "BATT" not in reading.values
    assert reading.values["VDD_CORE"] == pytest.approx(6.22421 * 0.861733 * 1e6)  # microwatts
    assert sum(reading.values.values()) / 1e6 == pytest.approx(7.2398, abs=1e-4)  # watts: the 12 products by hand


def test_pmic_currents_without_voltages_are_no_rail() -> None:
    assert parse_pmic(PI5_README).values == {}
    joined = PI5_README.replace("...\n", "  VDD_CORE_V volt(15)=0.72178200V\n")
    assert parse_pmic(joined).values == {"VDD_CORE": pytest.approx(0.75012 * 0.721782 * 1e6)}


def test_powerstats_names_each_meter_by_its_channel_and_keeps_the_latest() -> None:
    reading = parse_powerstats(ANDROIDX_CHANNELS + "\n" + METERS)
    assert reading.values == {"S2M_VDD_CPUCL2": 2600000.0, "S3M_VDD_CPUCL1": 300000.0, "channel7": 42.0}
    assert parse_powerstats(ANDROIDX_CHANNELS).values == {}  # channels without meters: nothing to read


def test_rapl_and_hwmon_lines() -> None:
    rapl = parse_rapl("package-0 123456 262143328850\npsys 9 100\nbroken line\n")
    assert rapl.values == {"package-0": 123456.0, "psys": 9.0} and rapl.wraps["package-0"] == 262143328850.0
    hwmon = parse_hwmon("ina3221/power1_input 1234000\nina3221/power2_input 50\nnot a reading\n")
    assert hwmon.values == {"ina3221/power1_input": 1234000.0, "ina3221/power2_input": 50.0}
