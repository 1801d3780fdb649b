"""ament_python package: `colcon build` installs the executables under lib/embodia_ros for `ros2 run`."""

from glob import glob

from setuptools import setup

package_name = "embodia_ros"

setup(
    name=package_name,
    version="0.1.0",
    packages=[package_name],
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", glob("launch/*.launch.yaml")),
        ("share/" + package_name + "/config", glob("config/*.yaml")),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="embodia developers",
    maintainer_email="embodia@example.org",
    description="embodia policies as ROS 2 nodes",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "policy_node = embodia_ros.nodes:policy_node",
            "lifecycle_policy_node = embodia_ros.nodes:lifecycle_policy_node",
            "sim_node = embodia_ros.nodes:sim_node",
            "record_node = embodia_ros.nodes:record_node",
        ],
    },
)
