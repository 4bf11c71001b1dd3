#include "data/dataset.hpp"

namespace ddpt {

const char* task_name(Task task) {
  switch (task) {
    case Task::kClassification:
      return "classification";
    case Task::kRegression:
      return "regression";
    case Task::kNextToken:
      return "next-token";
  }
  return "?";
}

}  // namespace ddpt
